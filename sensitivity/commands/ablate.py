"""`sensitivity ablate`: the ablation path between two training set-ups, one knob at a time."""
from __future__ import annotations

import sys

from pydantic import ValidationError

from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, load_study, number
from sensitivity.commands.launch import add_run_options, check_study_name, sweep_options
from sensitivity.commands.trial import CONFIGURATION_FIELDS, add_configuration_options, validation_message
from sensitivity.config.defaults import Cut, DefaultsError, load_table, trial_fields
from sensitivity.config.spaces import SpaceError
from sensitivity.core.spec import TrialSpec
from sensitivity.experiments.ablation import AblationError, Point, Setup, run_ablation
from sensitivity.studies import catalog
from sensitivity.studies.storage import StorageError, StorageLost
from sensitivity.sweep.driver import SweepError, SweepFailed, check_destinations
from sensitivity.sweep.plans import steps_per_epoch


def add_parsers(commands) -> None:
    p = commands.add_parser("ablate", help="walk from one set-up (FRAMEWORK:native|canonical) to another one "
                                           "semantics knob at a time, n seeds per point, into a study")
    p.add_argument("--from", dest="source", metavar="FRAMEWORK:REGIME",
                   help="where the path starts, e.g. torch:canonical or torch:native")
    p.add_argument("--to", dest="target", metavar="FRAMEWORK:REGIME",
                   help="where it ends, e.g. torch:native or tensorflow:native")
    p.add_argument("--largest-from", metavar="STUDY",
                   help="instead of --from, --to and the configuration: the largest native difference of that "
                        "transfer study's framework transfer, walked from the default's home framework to the one it "
                        "moved to, with the default's configuration on its dataset at its published budget (options "
                        "given override it)")
    p.add_argument("--budget-fraction", type=number(float, 0, strict=True, maximum=1),
                   help="with --largest-from: run this fraction of the default's published epochs (an ablation "
                        "attributes a difference and gives no verdict, so it may run cut)")
    add_configuration_options(p, "required (unless --largest-from)")
    p.add_argument("--seeds", type=number(int, 0, strict=True), default=3, help="seeds per point (default 3)")
    add_run_options(p)
    p.set_defaults(handler=_cmd_ablate, val_fraction=0.2)


def _cmd_ablate(args) -> int:
    # lazy: pandas
    from sensitivity.analysis.tables.ablation import ablation_path

    given = {name: getattr(args, name) for name in CONFIGURATION_FIELDS if getattr(args, name, None) is not None}
    if args.largest_from is not None:
        if args.source or args.target:
            raise UsageError("sensitivity ablate: --largest-from chooses --from and --to: give one or the other")
        args.source, args.target, chosen = largest_difference(args.largest_from, args.storage, args.budget_fraction)
        given = {**chosen, **given}
    elif args.budget_fraction is not None:
        raise UsageError("sensitivity ablate: --budget-fraction goes with --largest-from")
    if not args.source or not args.target:
        raise UsageError("sensitivity ablate: give --from and --to, or --largest-from STUDY")
    try:
        start, end = Setup.parse(args.source, "--from"), Setup.parse(args.target, "--to")
    except AblationError as exc:
        raise UsageError(f"sensitivity ablate: {exc}")
    if (start.framework, start.regime) == (end.framework, end.regime):
        raise UsageError(f"sensitivity ablate: --from and --to are both {args.source}: a path from a setup to itself "
                         "is one point; allowed: two setups that differ in framework or regime")
    if given.get("dataset") is None:
        raise UsageError("sensitivity ablate: --dataset is required")
    try:
        base = TrialSpec(**{**given, "framework": start.framework, "semantics": start.regime})
        for setup in (start, end):  # both ends must run before any point does
            Point.of(setup.framework, setup.knobs()).spec(base)
    except ValidationError as exc:
        raise UsageError(f"sensitivity ablate: {validation_message(exc)}")
    options = sweep_options(args, trials=1)
    check_study_name(args.study, "ablate")
    options.study = args.study or f"ablate-{start.framework}-{start.regime}-{end.framework}-{end.regime}-{base.dataset}"
    try:
        check_destinations(options)  # before the first point's line is printed
        run_ablation(base, start, end, args.seeds, options, log=lambda message: print(message, file=sys.stderr))
        study = catalog.load(options.study, options.storage)
    except (SweepFailed, StorageLost) as exc:  # a run that lost or left trials: one line, exit 1
        print(f"sensitivity ablate: {exc}", file=sys.stderr)
        return EXIT_TRIAL_FAILED
    except (AblationError, SpaceError, SweepError, StorageError) as exc:
        raise UsageError(f"sensitivity ablate: {exc}")
    print(describe_path(ablation_path(study), study.study_name))
    return EXIT_OK


def largest_difference(study_name: str, storage, fraction=None) -> tuple:
    """(--from, --to, configuration) of the native framework-transfer pair with the largest difference at the
    published budget in a transfer study: the default's home framework, the framework it moved to, and its
    TrialSpec fields on that dataset (cut to `fraction` of its published epochs where given)."""
    # lazy: pandas
    from sensitivity.analysis.table import NotEnoughData
    from sensitivity.analysis.tables.transfer import transfer_comparisons

    study = load_study("ablate", study_name, storage)
    try:
        pairs = transfer_comparisons(study)
    except NotEnoughData as reason:
        raise UsageError(f"sensitivity ablate: --largest-from {study_name}: {reason}")
    pairs = pairs[pairs["semantics"].eq("native") & pairs["budget_scale"].ge(1 - 1e-6) & pairs["estimate"].notna()]
    if pairs.empty:
        raise UsageError(f"sensitivity ablate: --largest-from {study_name}: no native pair at the published budget")
    row = pairs.loc[pairs["estimate"].abs().idxmax()]
    entry = next((e for e in load_table() if e.name == row["default"]), None)
    if entry is None:
        raise UsageError(f"sensitivity ablate: --largest-from {study_name}: its default {row['default']} is no longer "
                         "in search_spaces/defaults.yaml")
    try:
        fields, _ = trial_fields(entry, row["dataset"], steps_per_epoch(row["dataset"], entry.config.get(
            "batch_size", 64), 0.2), Cut(fraction=fraction) if fraction else None)
    except DefaultsError as exc:
        raise UsageError(f"sensitivity ablate: {exc}")
    print(f"ablating the largest native difference of {study_name}: {row['subject']} against {row['reference']}, "
          f"{row['estimate']:+.3f}", file=sys.stderr)
    return f"{row['source_framework']}:native", f"{row['framework']}:native", {**fields, "dataset": row["dataset"]}


def describe_path(path, study_name: str) -> str:
    """The path as a table: each step's change, its validation and test accuracy and train time with their
    intervals, and the change of validation accuracy."""
    # lazy: pandas
    from sensitivity.analysis.intervals import Interval

    def cell(row, metric, digits=3):
        return Interval(row[f"{metric}_mean"], row[f"{metric}_low"], row[f"{metric}_high"], row["n"],
                        row[f"{metric}_method"]).text(digits)

    lines = [f"ablation path {path.source} -> {path.target}, study {study_name}: "
             f"{path.seeds} seeds per point, each step the knob that moved validation accuracy most; "
             "mean [95% interval]"]
    if path.inert:
        lines.append(f"no effect on this configuration, not walked: {', '.join(path.inert)}")
    rows = [("step", "change", "validation accuracy", "test accuracy", "train time s", "delta val")]
    for _, row in path.rows.iterrows():
        delta = "" if row["delta"] is None or row["step"] == 0 else f"{row['delta']:+.3f}"
        rows.append((str(row["step"]), row["change"], cell(row, "val_accuracy"), cell(row, "accuracy"),
                     cell(row, "train_time_s", 2), delta))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(value.ljust(width) for value, width in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)
