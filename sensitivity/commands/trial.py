"""`sensitivity trial`: one trial, from options or a configuration file, printed or as JSON."""
from __future__ import annotations

import argparse
import re
import sys

from pydantic import ValidationError

from sensitivity import datasets, frameworks
from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, MAX_TRIALS, UsageError, int_list, number
from sensitivity.config.files import ConfigError, load_config
from sensitivity.core import models
from sensitivity.core.spec import INITS, LR_POLICIES, OPTIMIZERS, SEMANTICS, TrialSpec
from sensitivity.frameworks import gpu
from sensitivity.studies import catalog, specs
from sensitivity.studies.storage import StorageError
from sensitivity.trial.fit import FitError, check_prepared
from sensitivity.trial.runner import run_trial


CONFIGURATION_NUMBERS = [("batch-size", int, 0, True), ("lr", float, 0, True), ("epochs", int, 0, True),
                         ("iterations", int, 0, True), ("momentum", float, 0, False),
                         ("weight-decay", float, 0, False), ("gamma", float, 0, False), ("power", float, 0, False),
                         ("stepsize", int, 0, True), ("val-fraction", float, 0, False), ("seed", int, 0, False),
                         ("threads", int, 0, False), ("timeout", float, 0, True)]


CONFIGURATION_FIELDS = ("dataset", "model", "optimizer", "lr_policy", "stepvalues",
                        *(option.replace("-", "_") for option, *_ in CONFIGURATION_NUMBERS))


def add_configuration_options(p, dataset_help: str) -> None:
    """The options of a trial's configuration (dataset, model and hyper-parameters): trial and ablate."""

    default = {name: field.default for name, field in TrialSpec.model_fields.items()}
    p.add_argument("--dataset", choices=sorted(datasets.REGISTRY), help=dataset_help)
    p.add_argument("--model", choices=sorted(models.MODELS), help="default: the dataset's model")
    for option, kind, minimum, strict in CONFIGURATION_NUMBERS:
        p.add_argument("--" + option, type=number(kind, minimum, strict, _maximum(option.replace("-", "_"))),
                       help=f"default {default[option.replace('-', '_')]}")
    p.add_argument("--optimizer", choices=OPTIMIZERS, help=f"default {default['optimizer']}")
    p.add_argument("--lr-policy", choices=LR_POLICIES, help="default fixed")
    p.add_argument("--stepvalues", type=int_list, help="multistep: e.g. 4000,6000")


def _maximum(field: str):
    """TrialSpec's upper bound of `field` (docs/bounds.md), or None."""
    bounds = [getattr(m, "le", None) for m in TrialSpec.model_fields[field].metadata]
    return next((b for b in bounds if b is not None), None)


def add_parsers(commands) -> None:
    p = commands.add_parser("trial", help="run one trial and print its result",
                            argument_default=argparse.SUPPRESS)  # only options given override a --config
    p.add_argument("--config", help="a configuration YAML (from import-caffe or the defaults table)")
    p.add_argument("--from-study", help="rerun a trial of this study (with --trial N; options override)")
    p.add_argument("--trial", type=number(int, 0, maximum=MAX_TRIALS), help="the trial number, with --from-study")
    p.add_argument("--storage", help="the study's storage, with --from-study (default results/optuna.db)")
    p.add_argument("--framework", choices=sorted(frameworks.FRAMEWORKS), help="required, here or in --config")
    p.add_argument("--backend", help="for keras: tensorflow (default), jax or torch")
    add_configuration_options(p, "required, here or in --config")
    p.add_argument("--semantics", choices=SEMANTICS,
                   help="native (default): the framework's own optimizer classes, schedulers, initialisers and "
                        "defaults; canonical: the same formulas and numpy weights in every framework")
    p.add_argument("--init", choices=INITS,
                   help="neutral: the same numpy weights in every framework; framework: its own initialiser "
                        "(default: framework under native, neutral under canonical)")
    p.add_argument("--device", help="cpu (default), gpu or gpu:N")
    p.add_argument("--deterministic", action="store_true",
                   help="each framework's deterministic-kernel flags (recorded in the result's env)")
    p.add_argument("--data-dir", help="folder of official dataset files (default $SENSITIVITY_DATA_DIR)")
    p.add_argument("--download", action="store_true", default=False,
                   help="fetch a missing official dataset into the data folder first (pinned SHA-256 checked)")
    p.add_argument("--json", action="store_true", default=False, help="print the TrialResult as one JSON line")
    p.set_defaults(handler=_cmd_trial)


# A command-line option and the config fields it takes the place of: iterations would win over --epochs,
# a config's inline layers over --model, and a rerun's initialiser and knobs over --semantics.
OVERRIDES = {"epochs": ("iterations",), "iterations": ("epochs",), "model": ("layers",), "semantics": ("init", "knobs")}


def _spec_from_args(args) -> TrialSpec:
    try:
        config = load_config(args.config) if hasattr(args, "config") else {}
    except ConfigError as exc:
        raise UsageError(f"sensitivity trial: --config: {exc}")
    if hasattr(args, "from_study"):
        config = {**config, **_fields_from_study(args)}
    given = {name: getattr(args, name) for name in TrialSpec.model_fields if hasattr(args, name)}
    for option, replaced in OVERRIDES.items():  # an option replaces what the config set in its place
        if option in given:
            config = {k: v for k, v in config.items() if k not in replaced or k in given}
    fields = {**config, **given}
    for required in ("framework", "dataset"):
        if required not in fields:
            raise UsageError(f"sensitivity trial: --{required} is required (on the command line or in --config)")
    try:
        return TrialSpec(**fields)
    except ValidationError as exc:
        origin = lambda field: _option(field) if field in given else f"{args.config}: config.{field}"  # noqa: E731
        raise UsageError(f"sensitivity trial: {validation_message(exc, origin)}")


def validation_message(exc, origin=None) -> str:
    """A TrialSpec's first validation error in one line, its fields named as options (`origin(field)`)."""
    origin = origin or _option
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    if error["loc"]:
        return f"{origin(error['loc'][0])}: {message}"
    # a rule across fields: name each field as its option
    return re.sub(r"\b(" + "|".join(TrialSpec.model_fields) + r")\b", lambda m: _option(m[1]), message)


def _fields_from_study(args) -> dict:
    """The TrialSpec fields trial N of a study ran with (its kept-weights path left out)."""

    if not hasattr(args, "trial"):
        raise UsageError("sensitivity trial: --from-study needs --trial N")
    try:
        study = catalog.load(args.from_study, getattr(args, "storage", None))
    except StorageError as exc:
        raise UsageError(f"sensitivity trial: --from-study: {exc}")
    numbers = {t.number: t for t in study.get_trials(deepcopy=False)}
    if args.trial not in numbers:
        raise UsageError(f"sensitivity trial: --trial {args.trial}: study {args.from_study} has trials "
                         f"0 to {max(numbers, default=-1)}")
    spec = specs.trial_spec(study, numbers[args.trial])
    return spec.model_copy(update={"keep_weights": None, "keep_checkpoints": False}).model_dump(exclude_defaults=True)


def _option(field: str) -> str:
    return "--" + str(field).replace("_", "-")


def _cmd_trial(args) -> int:
    spec = _spec_from_args(args)
    try:
        frameworks.worker_variables(spec)
    except ValueError as exc:
        raise UsageError(f"sensitivity trial: --backend: {exc}")
    refusal = spec.device != "cpu" and frameworks.gpu_refusal(spec.framework, spec.backend)
    if refusal:  # the framework's own reason first: it holds on any machine
        raise UsageError(f"sensitivity trial: --device {spec.device}: {spec.framework} cannot use a GPU here: "
                         f"{refusal}")
    try:
        gpu.check_here(spec.device)
    except ValueError as exc:
        raise UsageError(f"sensitivity trial: --device: {exc}")
    try:
        path = datasets.prepare(spec.dataset, spec.data_dir, download=args.download)
    except datasets.DatasetError as exc:
        raise UsageError(f"sensitivity trial: --dataset {spec.dataset}: {exc}")
    try:
        check_prepared(spec, path)
    except FitError as exc:
        raise UsageError(f"sensitivity trial: {exc}")

    def progress(event: dict) -> None:
        if event.get("event") == "epoch" and not args.json:
            loss = event["train_loss"]
            print(f"epoch {event['epoch']}: loss {loss if loss is None else round(loss, 4)}, "
                  f"test accuracy {event['test_accuracy']}, {event['seconds']:.2f} s", file=sys.stderr)

    result = run_trial(spec, on_event=progress, echo_stderr=True)  # only the progress lines obey --json
    if args.json:
        print(result.to_json())
    else:
        _print_summary(result)
    return EXIT_OK if result.status in ("ok", "diverged") else EXIT_TRIAL_FAILED


def _semantics_line(described) -> str:
    if not described:
        return "-"
    return f"{described['regime']}: {described['optimizer']}; init {described['init']}"


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
            ("parameters", fmt(result.params)), ("version", result.env.get("framework_version", "-")),
            ("semantics", _semantics_line(result.env.get("semantics")))]
    for name, value in rows:
        print(f"  {name:<20} {value}")
    if result.status in ("failed", "timeout") and result.stderr_tail:
        print("  stderr (tail):\n    " + result.stderr_tail.strip().replace("\n", "\n    "))


