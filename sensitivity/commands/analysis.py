"""`sensitivity robustness`, `plot` and `report`: attack a study's models; its figures; one HTML page."""
from __future__ import annotations

import sys
from pathlib import Path

from sensitivity.analysis.figure_table import KINDS
from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, load_study, number
from sensitivity.core import paths
from sensitivity.studies.storage import default_url, folder_beside



def add_parsers(commands) -> None:
    p = commands.add_parser("robustness", help="attack a study's trained models (FGSM, PGD; white-box and "
                                               "transferred between frameworks) and record accuracy against eps")
    p.add_argument("study")
    p.add_argument("--protocol", metavar="FILE",
                   help="the robustness protocol fixed before any attack: eps grid, attacks, margin, checks "
                        "(default search_spaces/robustness.yaml); recorded with the study")
    p.add_argument("--samples", type=number(int, 0, strict=True),
                   help="attack only the first N test samples, for a quick look (default: the whole test set)")
    p.add_argument("--defaults-only", action="store_true", help="only each framework's own default")
    p.add_argument("--semantics", choices=("native", "canonical", "both"), default="native",
                   help="attack the models trained in this regime (default native)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="keep the models' weights and checkpoints, and the surrogates' files, after the attacks "
                        "(default: removed once every model is attacked; a later robustness run of the study is "
                        "then refused)")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_robustness)
    p = commands.add_parser("plot", help="write one figure of a study (.html, .png, .svg or .pdf)")
    p.add_argument("study")
    p.add_argument("--kind", required=True, choices=KINDS)
    p.add_argument("--out", required=True, help="FILE.html, .png, .svg or .pdf")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_plot)
    p = commands.add_parser("report", help="write a study's report: every figure and table in one HTML page")
    p.add_argument("study")
    p.add_argument("--out", help="default results/STUDY-report.html")
    p.add_argument("--with-study", action="append", default=[], metavar="NAME",
                   help="another study of the storage whose transfer matrix, robustness or ablation path fills "
                        "those sections (e.g. the study of sensitivity transfer); repeatable")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_report)


def _load(command: str, args, name=None):
    return load_study(command, name or args.study, args.storage)


def _cmd_robustness(args) -> int:
    # lazy: pandas, plotly
    from sensitivity.analysis.tables.robustness import robustness_curves
    from sensitivity.analysis.table import trials_table
    from sensitivity.experiments.robustness import RobustnessError, attack_study
    from sensitivity.experiments.robustness_protocol import ProtocolError, load

    try:
        load(args.protocol)  # refused before any study is opened: a bad protocol writes nothing
    except ProtocolError as exc:
        raise UsageError(f"sensitivity robustness: {exc}")
    study = _load("robustness", args)
    try:
        regimes = ("native", "canonical") if args.semantics == "both" else (args.semantics,)
        records, failures = attack_study(study, args.samples, args.defaults_only, regimes=regimes,
                                         log=lambda message: print(message, file=sys.stderr),
                                         protocol_path=args.protocol, keep_weights=args.keep_checkpoints,
                                         surrogate_root=folder_beside(args.storage or default_url(), "robustness"))
    except RobustnessError as exc:
        raise UsageError(f"sensitivity robustness: {exc}")
    for trial_number, reason in failures.items():
        print(f"trial {trial_number}: not attacked: {reason}")
    if not records:
        return EXIT_TRIAL_FAILED
    curves = robustness_curves(trials_table(study))
    white = curves[curves["kind"].eq("white-box")].pivot_table(
        index=["semantics", "dataset", "default", "role", "attack", "target_framework", "n"], columns="eps",
        values="accuracy_mean")
    print(f"white-box accuracy against eps (n = models), study {study.study_name}:")
    print(white.to_string(float_format=lambda v: f"{v:.3f}"))
    return EXIT_TRIAL_FAILED if failures else EXIT_OK


def _cmd_plot(args) -> int:
    # lazy: optuna, pandas, plotly
    from sensitivity.analysis.figures.export import FORMATS
    from sensitivity.analysis.figure_table import write_figure
    from sensitivity.analysis.table import NotEnoughData

    _check_out("plot", args.out, FORMATS)
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


def _check_out(command: str, out, endings=None) -> None:
    """A UsageError, before anything is read or written, for an --out of an ending not in `endings` or that is
    not a regular file (a FIFO would block the write; a device, a folder)."""
    if out is None:
        return
    if endings and Path(out).suffix.lower().lstrip(".") not in endings:
        raise UsageError(f"sensitivity {command}: --out {out!r}: allowed endings: "
                         + ", ".join(f".{e}" for e in endings))
    try:
        paths.check_output(out, "--out")
    except ValueError as exc:
        raise UsageError(f"sensitivity {command}: {exc}")


def _results_path(name: str, suffix: str, command: str) -> Path:
    """results/NAME+suffix, the default output of a study's command; a name unfit for a file is refused."""
    try:
        return paths.under(paths.RESULTS, name, suffix)
    except paths.UnsafeName as exc:
        raise UsageError(f"sensitivity {command}: {exc}; give --out")


def _cmd_report(args) -> int:
    # lazy: optuna, pandas, plotly
    from sensitivity.analysis.report.page import write_report

    _check_out("report", args.out)
    study = _load("report", args)
    others = [_load("report", args, name) for name in args.with_study]
    out = write_report(study, Path(args.out) if args.out else _results_path(args.study, "-report.html", "report"),
                       others=others)
    print(f"report: {Path(out).resolve()}")
    return EXIT_OK
