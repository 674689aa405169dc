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
    p.add_argument("--to-dashboard", action="store_true",
                   help="also write the Findings and the importance table as the study's note in optuna-dashboard, "
                        "and the figures as its artifacts (replacing those of an earlier run); without it nothing "
                        "is written to the study")
    p.add_argument("--artifact-dir", metavar="DIR", help="with --to-dashboard: the artifact store's folder (default: "
                   "artifacts/ beside the storage, which sensitivity dashboard serves)")
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
    if args.artifact_dir and not args.to_dashboard:
        raise UsageError("sensitivity report: --artifact-dir is for --to-dashboard")
    study = _load("report", args)
    others = [_load("report", args, name) for name in args.with_study]
    out = write_report(study, Path(args.out) if args.out else _results_path(args.study, "-report.html", "report"),
                       others=others)
    print(f"report: {Path(out).resolve()}")
    if args.to_dashboard:
        _to_dashboard(study, args)
    return EXIT_OK


def _to_dashboard(study, args) -> None:
    """The study's note and figures in optuna-dashboard (`studies.notes`): every figure drawn first, so that a
    figure that cannot be drawn (no Chromium) writes nothing."""
    # lazy: plotly, kaleido, optuna-dashboard
    from sensitivity.analysis.report.note import figure_files, note_markdown
    from sensitivity.studies.notes import artifact_dir, publish

    try:
        files = figure_files(study, log=lambda line: print(f"dashboard: {line}", file=sys.stderr))
    except (ImportError, RuntimeError) as exc:
        raise UsageError(f"sensitivity report: --to-dashboard: {str(exc).splitlines()[0]}")
    findings, importance = _findings_text(study, args), _importance_text(study)
    folder = Path(args.artifact_dir) if args.artifact_dir else artifact_dir(args.storage)
    written = publish(study, [(name, data, mime) for name, data, mime, _ in files],
                      lambda urls: note_markdown(study.study_name, findings, importance,
                                                 [(name, title) for name, _, _, title in files], urls), folder)
    print(f"dashboard: the note of study {study.study_name} and {len(written)} figures in {folder.resolve()} "
          "(sensitivity dashboard shows them)")


def _findings_text(study, args) -> str:
    """The Findings as `sensitivity findings STUDY --with-study ...` prints them."""
    # lazy: pandas, scipy
    from sensitivity.analysis.claims.findings import study_findings_records
    from sensitivity.analysis.claims.text import findings_text
    from sensitivity.analysis.table import UNFRAMED, trials_table, unframed

    others = [_load("report", args, name) for name in args.with_study]
    tables = [trials_table(s) for s in [study, *others]]  # once each
    if all(unframed(t) for t in tables):
        return UNFRAMED
    heading = f"Findings of {study.study_name}" + (f" with {', '.join(args.with_study)}" if args.with_study else "")
    return findings_text(study_findings_records(tables[0], tables[1:]), heading, 0.02)


def _importance_text(study) -> str:
    """The importance table as Markdown: the report's (fANOVA and PED-ANOVA per regime, read from its cache) for a
    study of this tool; a designed study's indices; else `sensitivity importance STUDY`'s record (the estimator that
    fits the sampling, its first objective); or why there is none."""
    # lazy: SALib, scikit-learn
    from sensitivity.analysis.rankings.designed import NoDesign, designed_importance, importance_record
    from sensitivity.analysis.rankings.plain import plain_importance
    from sensitivity.analysis.report.note import importance_markdown, report_importance, report_importance_markdown
    from sensitivity.analysis.table import NotEnoughData, trials_table, unframed

    try:
        try:
            return importance_markdown(importance_record(designed_importance(study)))
        except NoDesign:
            if not unframed(trials_table(study)):
                return report_importance_markdown(report_importance(study))
            first = (study.metric_names or ["values[0]"])[0] if len(study.directions) > 1 else None
            return importance_markdown(plain_importance(study, first))
    except (ValueError, NotEnoughData) as exc:
        return f"No importance: {exc}."
