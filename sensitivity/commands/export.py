"""`sensitivity export`: a study's trials as CSV or Parquet, or with --figure the data one figure is drawn from,
as CSV or JSON, so that any figure can be drawn again elsewhere."""
from __future__ import annotations

import sys
from pathlib import Path

from sensitivity.analysis.figure_table import KINDS
from sensitivity.commands.analysis import _check_out, _results_path
from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, storage_errors
from sensitivity.studies import catalog

TRIAL_FORMATS, FIGURE_FORMATS = ("csv", "parquet"), ("csv", "json")


def add_parsers(commands) -> None:
    p = commands.add_parser("export", help="write a study's trials as CSV or Parquet, or with --figure KIND the "
                                           "data of one figure as CSV or JSON")
    p.add_argument("name")
    p.add_argument("--figure", choices=KINDS, metavar="KIND",
                   help=f"the data this figure is drawn from instead of the trials: {', '.join(KINDS)}")
    p.add_argument("--format", choices=sorted({*TRIAL_FORMATS, *FIGURE_FORMATS}),
                   help="csv (default), parquet (trials only) or json (--figure only)")
    p.add_argument("--out", help="default results/NAME.csv or .parquet; with --figure results/NAME-KIND.csv or "
                                 ".json, and beside a CSV one per further table (NAME-KIND.FIELD.csv) and "
                                 "NAME-KIND.fields.csv")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_export)


def _cmd_export(args) -> int:
    fmt = args.format or "csv"
    allowed = FIGURE_FORMATS if args.figure else TRIAL_FORMATS
    if fmt not in allowed:
        what = f"--figure {args.figure}" if args.figure else "the trials (no --figure)"
        raise UsageError(f"sensitivity export: --format {fmt}: {what} is written as {' or '.join(allowed)}")
    _check_out("export", args.out)
    suffix = f"-{args.figure}.{fmt}" if args.figure else f".{fmt}"
    out = Path(args.out) if args.out else _results_path(args.name, suffix, "export")
    with storage_errors("export"):
        study = catalog.load(args.name, args.storage)
    if args.figure:
        return _figure(study, args.figure, fmt, out)
    print(catalog.export(study, fmt, out))
    return EXIT_OK


def _figure(study, kind: str, fmt: str, out: Path) -> int:
    # lazy: optuna, pandas, plotly
    from sensitivity.analysis.figures.export import write_data
    from sensitivity.analysis.figure_table import figure_data
    from sensitivity.analysis.table import NotEnoughData

    try:
        written = write_data(figure_data(study, kind), kind, out, fmt)
    except NotEnoughData as exc:  # as `sensitivity plot` says it: the study cannot fill this figure yet
        print(f"sensitivity export: {kind}: {exc}", file=sys.stderr)
        return EXIT_TRIAL_FAILED
    except ValueError as exc:
        raise UsageError(f"sensitivity export: {str(exc).splitlines()[0]}")
    for path in written:
        print(path)
    return EXIT_OK
