"""`sensitivity ablate`: the ablation path between two training set-ups, one knob at a time."""
from __future__ import annotations

import sys

from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, number


def add_parsers(commands) -> None:
    from sensitivity.commands.sweep import _add_run_options
    from sensitivity.commands.trial import add_configuration_options

    p = commands.add_parser("ablate", help="walk from one set-up (FRAMEWORK:native|canonical) to another one "
                                           "semantics knob at a time, n seeds per point, into a study")
    p.add_argument("--from", dest="source", required=True, metavar="FRAMEWORK:REGIME",
                   help="where the path starts, e.g. torch:canonical or torch:native")
    p.add_argument("--to", dest="target", required=True, metavar="FRAMEWORK:REGIME",
                   help="where it ends, e.g. torch:native or tensorflow:native")
    add_configuration_options(p, "required")
    p.add_argument("--seeds", type=number(int, 0, strict=True), default=3, help="seeds per point (default 3)")
    _add_run_options(p)
    p.set_defaults(handler=_cmd_ablate, val_fraction=0.2)


def _cmd_ablate(args) -> int:
    from pydantic import ValidationError

    from sensitivity.ablation import AblationError, Point, Setup, run_ablation
    from sensitivity.analysis.ablation import ablation_path
    from sensitivity.commands.sweep import _check_study_name, _options
    from sensitivity.commands.trial import CONFIGURATION_FIELDS, validation_message
    from sensitivity.spaces import SpaceError
    from sensitivity.spec import TrialSpec
    from sensitivity.sweep import studies
    from sensitivity.sweep.driver import SweepError, SweepFailed
    from sensitivity.sweep.storage import StorageError, StorageLost

    try:
        start, end = Setup.parse(args.source, "--from"), Setup.parse(args.target, "--to")
    except AblationError as exc:
        raise UsageError(f"sensitivity ablate: {exc}")
    if args.dataset is None:
        raise UsageError("sensitivity ablate: --dataset is required")
    given = {name: getattr(args, name) for name in CONFIGURATION_FIELDS if getattr(args, name, None) is not None}
    try:
        base = TrialSpec(**{**given, "framework": start.framework, "semantics": start.regime})
        for setup in (start, end):  # both ends must run before any point does
            Point.of(setup.framework, setup.knobs()).spec(base)
    except ValidationError as exc:
        raise UsageError(f"sensitivity ablate: {validation_message(exc)}")
    options = _options(args, trials=1)
    _check_study_name(args.study, "ablate")
    options.study = args.study or f"ablate-{start.framework}-{start.regime}-{end.framework}-{end.regime}-{base.dataset}"
    try:
        run_ablation(base, start, end, args.seeds, options, log=lambda message: print(message, file=sys.stderr))
        study = studies.load(options.study, options.storage)
    except (SweepFailed, StorageLost) as exc:  # a run that lost or left trials: one line, exit 1
        print(f"sensitivity ablate: {exc}", file=sys.stderr)
        return EXIT_TRIAL_FAILED
    except (AblationError, SpaceError, SweepError, StorageError) as exc:
        raise UsageError(f"sensitivity ablate: {exc}")
    print(describe_path(ablation_path(study), study.study_name))
    return EXIT_OK


def describe_path(path, study_name: str) -> str:
    """The path as a table: each step's change, its validation and test accuracy and train time with their
    intervals, and the change of validation accuracy."""
    from sensitivity.analysis.intervals import Interval

    def cell(row, metric, digits=3):
        return Interval(row[f"{metric}_mean"], row[f"{metric}_low"], row[f"{metric}_high"], row["n"],
                        row[f"{metric}_method"]).text(digits)

    lines = [f"ablation path {path.attrs['source']} -> {path.attrs['target']}, study {study_name}: "
             f"{path.attrs['seeds']} seeds per point, each step the knob that moved validation accuracy most; "
             "mean [95% interval]"]
    if path.attrs.get("inert"):
        lines.append(f"no effect on this configuration, not walked: {', '.join(path.attrs['inert'])}")
    rows = [("step", "change", "validation accuracy", "test accuracy", "train time s", "delta val")]
    for _, row in path.iterrows():
        delta = "" if row["delta"] is None or row["step"] == 0 else f"{row['delta']:+.3f}"
        rows.append((str(row["step"]), row["change"], cell(row, "val_accuracy"), cell(row, "accuracy"),
                     cell(row, "train_time_s", 2), delta))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(value.ljust(width) for value, width in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)
