"""Command line: parses arguments, calls the library, maps errors to exit codes.

Exit codes: 0 success (a trial that trained to a result, diverged included); 1 a trial that failed or
timed out; 2 a usage error or bad input (one line on stderr, nothing run).
"""
from __future__ import annotations

import argparse
import re
import sys

from sensitivity.spec import LR_POLICIES, OPTIMIZERS, TrialSpec

EXIT_OK, EXIT_TRIAL_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input; the message is one line naming the option and what is allowed."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and no usage block."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message}")


def _number(kind, minimum=None, strict=False):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}")
        if minimum is not None and (value < minimum or (strict and value == minimum)):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum}, got {text}")
        return value
    parse.__name__ = kind.__name__
    return parse


def _int_list(text: str):
    try:
        return tuple(int(part) for part in text.split(",") if part)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")


def _add_trial_parser(commands) -> None:
    from sensitivity import datasets, frameworks, models

    default = {name: field.default for name, field in TrialSpec.model_fields.items()}
    p = commands.add_parser("trial", help="run one trial and print its result",
                            argument_default=argparse.SUPPRESS)  # only options given override a --config
    p.add_argument("--config", help="a configuration YAML (from import-caffe or the defaults table)")
    p.add_argument("--framework", choices=sorted(frameworks.FRAMEWORKS), help="required, here or in --config")
    p.add_argument("--backend", help="for keras: tensorflow (default), jax or torch")
    p.add_argument("--dataset", choices=sorted(datasets.REGISTRY), help="required, here or in --config")
    p.add_argument("--model", choices=sorted(models.MODELS), help="default: the dataset's model")
    for option, kind, minimum, strict in [("batch-size", int, 0, True), ("lr", float, 0, True),
                                          ("epochs", int, 0, True), ("iterations", int, 0, True),
                                          ("momentum", float, 0, False), ("weight-decay", float, 0, False),
                                          ("gamma", float, 0, False), ("power", float, 0, False),
                                          ("stepsize", int, 0, True), ("val-fraction", float, 0, False),
                                          ("seed", int, 0, False), ("threads", int, 0, False),
                                          ("timeout", float, 0, True)]:
        p.add_argument("--" + option, type=_number(kind, minimum, strict),
                       help=f"default {default[option.replace('-', '_')]}")
    p.add_argument("--optimizer", choices=OPTIMIZERS, help=f"default {default['optimizer']}")
    p.add_argument("--lr-policy", choices=LR_POLICIES, help="default fixed")
    p.add_argument("--stepvalues", type=_int_list, help="multistep: e.g. 4000,6000")
    p.add_argument("--init", choices=("neutral", "framework"),
                   help="neutral (default): the same numpy weights in every framework; framework: its own")
    p.add_argument("--device", help="cpu (default), gpu or gpu:N")
    p.add_argument("--data-dir", help="folder of official dataset files (default $SENSITIVITY_DATA_DIR)")
    p.add_argument("--json", action="store_true", default=False, help="print the TrialResult as one JSON line")
    p.set_defaults(handler=_cmd_trial)


def _spec_from_args(args) -> TrialSpec:
    from pydantic import ValidationError

    from sensitivity.configs import ConfigError, load_config

    try:
        config = load_config(args.config) if hasattr(args, "config") else {}
    except ConfigError as exc:
        raise UsageError(f"sensitivity trial: --config: {exc}")
    given = {name: getattr(args, name) for name in TrialSpec.model_fields if hasattr(args, name)}
    fields = {**config, **given}
    for required in ("framework", "dataset"):
        if required not in fields:
            raise UsageError(f"sensitivity trial: --{required} is required (on the command line or in --config)")
    try:
        return TrialSpec(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        if error["loc"]:
            field = error["loc"][0]
            origin = _option(field) if field in given else f"{args.config}: config.{field}"
            message = f"{origin}: {message}"
        else:  # a rule across fields: name each field as its option
            message = re.sub(r"\b(" + "|".join(TrialSpec.model_fields) + r")\b", lambda m: _option(m[1]), message)
        raise UsageError(f"sensitivity trial: {message}")


def _option(field: str) -> str:
    return "--" + str(field).replace("_", "-")


def _cmd_trial(args) -> int:
    from sensitivity import datasets, frameworks
    from sensitivity.trial.runner import run_trial

    spec = _spec_from_args(args)
    try:
        frameworks.worker_variables(spec)
    except ValueError as exc:
        raise UsageError(f"sensitivity trial: --backend: {exc}")
    try:
        datasets.prepare(spec.dataset, spec.data_dir)
    except datasets.DatasetError as exc:
        raise UsageError(f"sensitivity trial: --dataset {spec.dataset}: {exc}")

    def progress(event: dict) -> None:
        if event.get("event") == "epoch" and not args.json:
            loss = event["train_loss"]
            print(f"epoch {event['epoch']}: loss {loss if loss is None else round(loss, 4)}, "
                  f"test accuracy {event['test_accuracy']}, {event['seconds']:.2f} s", file=sys.stderr)

    result = run_trial(spec, on_event=progress, echo_stderr=not args.json)
    if args.json:
        print(result.to_json())
    else:
        _print_summary(result)
    return EXIT_OK if result.status in ("ok", "diverged") else EXIT_TRIAL_FAILED


def _print_summary(result) -> None:
    spec = result.spec
    print(f"{spec.get('framework')} on {spec.get('dataset')}: {result.status}"
          + (f" ({result.reason})" if result.reason else ""))
    fmt = lambda v, unit="": "-" if v is None else (f"{v:.4g}{unit}" if isinstance(v, float) else f"{v}{unit}")  # noqa: E731
    rows = [("test accuracy", fmt(result.accuracy)), ("validation accuracy", fmt(result.val_accuracy)),
            ("final train loss", fmt(result.loss)), ("setup", fmt(result.setup_time_s, " s")),
            ("compile", fmt(result.compile_time_s, " s")), ("train", fmt(result.train_time_s, " s")),
            ("test", fmt(result.test_time_s, " s")), ("throughput", fmt(result.throughput, " samples/s")),
            ("peak RSS", fmt(result.peak_rss_mb, " MB")), ("CPU", fmt(result.cpu_percent, " %")),
            ("parameters", fmt(result.params)), ("version", result.env.get("framework_version", "-"))]
    for name, value in rows:
        print(f"  {name:<20} {value}")
    if result.status in ("failed", "timeout") and result.stderr_tail:
        print("  stderr (tail):\n    " + result.stderr_tail.strip().replace("\n", "\n    "))


def _add_listing_parsers(commands) -> None:
    p = commands.add_parser("frameworks", help="list frameworks, their environment and version")
    p.set_defaults(handler=_cmd_frameworks)
    p = commands.add_parser("datasets", help="list datasets, or download one")
    p.add_argument("action", nargs="?", choices=("list", "download"), default="list")
    p.add_argument("name", nargs="?")
    p.add_argument("--data-dir")
    p.set_defaults(handler=_cmd_datasets)


def _cmd_frameworks(args) -> int:
    from sensitivity import frameworks

    print(f"{'framework':<12} {'environment':<12} {'version':<12} usable")
    for name, info in frameworks.FRAMEWORKS.items():
        version, usable, why = frameworks.probe(name)
        print(f"{name:<12} {info.env:<12} {version or '-':<12} {'yes' if usable else 'no: ' + why}")
    for name, why in frameworks.CONFIGURATION_ONLY.items():
        print(f"{name:<12} {'-':<12} {'-':<12} no: {why}")
    return EXIT_OK


def _cmd_datasets(args) -> int:
    from sensitivity import datasets

    if args.action == "download":
        if args.name not in datasets.REGISTRY:
            raise UsageError(f"sensitivity datasets download: unknown dataset {args.name!r}; "
                             f"allowed: {', '.join(sorted(datasets.REGISTRY))}")
        try:
            print(datasets.download(args.name, args.data_dir))
        except datasets.DatasetError as exc:
            print(f"sensitivity datasets download: {exc}", file=sys.stderr)
            return EXIT_TRIAL_FAILED
        return EXIT_OK
    print(f"{'name':<14} {'shape':<12} {'classes':<8} {'present':<8} source")
    for row in datasets.info_table(args.data_dir):
        shape = "x".join(str(n) for n in row["shape"])
        print(f"{row['name']:<14} {shape:<12} {row['classes']:<8} {'yes' if row['present'] else 'no':<8} "
              f"{row['source']}")
    return EXIT_OK


def _add_import_caffe_parser(commands) -> None:
    p = commands.add_parser("import-caffe", help="turn a Caffe solver (and net) into a configuration")
    p.add_argument("solver", help="SOLVER.prototxt")
    p.add_argument("--net", help="NET.prototxt (default: the solver's net: path, if it is beside the solver)")
    p.add_argument("--out", help="CONFIG.yaml to write (default: stdout)")
    p.set_defaults(handler=_cmd_import_caffe)


def _cmd_import_caffe(args) -> int:
    from sensitivity.caffe_import import CaffeImportError, import_solver
    from sensitivity.configs import dump_config

    try:
        text = dump_config(import_solver(args.solver, args.net))
    except CaffeImportError as exc:
        raise UsageError(f"sensitivity import-caffe: {exc}")
    if args.out:
        from sensitivity.datasets.base import atomic_write
        with atomic_write(args.out) as f:
            f.write(text.encode())
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _add_sweep_parser(commands) -> None:
    from sensitivity.sweep.driver import PRUNERS, SAMPLERS

    p = commands.add_parser("sweep", help="run a sweep of a search space on Ray Tune into an Optuna study")
    p.add_argument("space", help="search_spaces/NAME.yaml")
    p.add_argument("--trials", type=_number(int, 0, strict=True), required=True,
                   help="final trials the study should hold (orphans of a killed run do not count)")
    p.add_argument("--parallel", type=_number(int, 0, strict=True), default=1)
    p.add_argument("--sampler", choices=SAMPLERS, default="tpe")
    p.add_argument("--pruner", choices=PRUNERS, default="none")
    p.add_argument("--storage", help="sqlite:///FILE (default results/optuna.db), postgresql://..., journal:FILE")
    p.add_argument("--study", help="study name (default: the space's)")
    p.add_argument("--address", help="a running Ray cluster: auto or HOST:PORT (default: a local Ray)")
    p.add_argument("--cpus-per-trial", type=_number(float, 0, strict=True), default=1)
    p.add_argument("--gpus-per-trial", type=_number(float, 0), default=0)
    p.add_argument("--timeout-per-trial", type=_number(float, 0, strict=True))
    p.add_argument("--time-budget", type=_number(float, 0, strict=True), help="seconds for the whole sweep")
    p.add_argument("--seed", type=_number(int, 0), help="the sampler's seed")
    p.add_argument("--allow-space-change", action="store_true", help="resume a study made from another space")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_cmd_sweep)


def _cmd_sweep(args) -> int:
    from sensitivity.spaces import SpaceError
    from sensitivity.sweep.driver import SweepError, SweepOptions, run_sweep
    from sensitivity.sweep.storage import StorageError

    options = SweepOptions(
        trials=args.trials, parallel=args.parallel, sampler=args.sampler, pruner=args.pruner, storage=args.storage,
        study=args.study, address=args.address, cpus_per_trial=args.cpus_per_trial,
        gpus_per_trial=args.gpus_per_trial, timeout_per_trial=args.timeout_per_trial,
        time_budget=args.time_budget, seed=args.seed, allow_space_change=args.allow_space_change,
        progress=not args.no_progress)
    try:
        summary = run_sweep(args.space, options)
    except (SpaceError, SweepError, StorageError) as exc:
        raise UsageError(f"sensitivity sweep: {exc}")
    print(f"study {summary['study']} in {summary['storage']}: {summary['final_trials']} final trials"
          + (f"; orphans re-queued: {summary['orphans_requeued']}" if summary["orphans_requeued"] else ""))
    return EXIT_OK


def _add_study_parsers(commands) -> None:
    p = commands.add_parser("studies", help="list the studies of a storage, or show one")
    p.add_argument("action", choices=("list", "show"), nargs="?", default="list")
    p.add_argument("name", nargs="?")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_studies)
    p = commands.add_parser("export", help="write a study's trials as CSV or Parquet")
    p.add_argument("name")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv")
    p.add_argument("--out", help="default results/NAME.csv or .parquet")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_export)
    p = commands.add_parser("dashboard", help="optuna-dashboard on 127.0.0.1")
    p.add_argument("--storage")
    p.add_argument("--port", type=_number(int, 0, strict=True), default=8080)
    p.set_defaults(handler=_cmd_dashboard)


def _storage_errors(command: str):
    """Map a storage that cannot be used to a one-line usage error."""
    import contextlib

    from sensitivity.sweep.storage import StorageError

    @contextlib.contextmanager
    def mapping():
        try:
            yield
        except StorageError as exc:
            raise UsageError(f"sensitivity {command}: {exc}")
    return mapping()


def _cmd_studies(args) -> int:
    from sensitivity.sweep import studies

    with _storage_errors("studies"):
        if args.action == "show":
            if not args.name:
                raise UsageError("sensitivity studies show: a study NAME is required")
            print(studies.show(studies.load(args.name, args.storage)))
            return EXIT_OK
        rows = studies.list_studies(args.storage)
    print(f"{'study':<30} {'trials':>6} {'final':>6} {'directions':<22} started")
    for row in rows:
        print(f"{row['study']:<30} {row['trials']:>6} {row['final']:>6} {row['directions']:<22} {row['started']}")
    return EXIT_OK


def _cmd_export(args) -> int:
    from pathlib import Path

    from sensitivity.sweep import studies

    with _storage_errors("export"):
        study = studies.load(args.name, args.storage)
    out = studies.export(study, args.format, Path(args.out or f"results/{args.name}.{args.format}"))
    print(out)
    return EXIT_OK


def _cmd_dashboard(args) -> int:
    from sensitivity.sweep import studies

    with _storage_errors("dashboard"):
        return studies.dashboard(args.storage, args.port)


def build_parser() -> Parser:
    parser = Parser(prog="sensitivity", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_trial_parser(commands)
    _add_listing_parsers(commands)
    _add_import_caffe_parser(commands)
    _add_sweep_parser(commands)
    _add_study_parsers(commands)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except UsageError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
