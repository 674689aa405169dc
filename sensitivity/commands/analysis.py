"""`sensitivity plot` and `sensitivity report`: a study's figures, and one self-contained HTML page."""
from __future__ import annotations

import sys
from pathlib import Path

from sensitivity.commands.common import EXIT_OK, UsageError

KINDS = ("frontier", "importance", "isolation", "slice", "contour", "curves", "seeds", "resources", "divergence",
         "transfer")


def add_parsers(commands) -> None:
    p = commands.add_parser("plot", help="write one figure of a study (.html, .png, .svg or .pdf)")
    p.add_argument("study")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--out", required=True, help="FILE.html, .png, .svg or .pdf")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_plot)
    p = commands.add_parser("report", help="write a study's report: every figure and table in one HTML page")
    p.add_argument("study")
    p.add_argument("--out", help="default results/STUDY-report.html")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_report)


def _load(command: str, args):
    from sensitivity.sweep import studies
    from sensitivity.sweep.storage import StorageError
    try:
        return studies.load(args.study, args.storage)
    except StorageError as exc:
        raise UsageError(f"sensitivity {command}: {exc}")


def _cmd_plot(args) -> int:
    from sensitivity.analysis.plots import write_figure
    from sensitivity.analysis.table import NotEnoughData

    study = _load("plot", args)
    try:
        out = write_figure(study, args.kind, Path(args.out))
    except NotEnoughData as exc:
        print(f"sensitivity plot: {args.kind}: {exc}", file=sys.stderr)
        return 1
    except (ValueError, RuntimeError, ImportError) as exc:
        raise UsageError(f"sensitivity plot: {str(exc).splitlines()[0]}")
    print(out)
    return EXIT_OK


def _cmd_report(args) -> int:
    from sensitivity.analysis.report import write_report

    study = _load("report", args)
    out = write_report(study, Path(args.out or f"results/{args.study}-report.html"))
    print(f"report: {Path(out).resolve()}")
    return EXIT_OK
