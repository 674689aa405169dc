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

    defaults = TrialSpec.model_fields
    p = commands.add_parser("trial", help="run one trial and print its result")
    p.add_argument("--framework", required=True, choices=sorted(frameworks.FRAMEWORKS))
    p.add_argument("--backend", help="for keras: tensorflow (default), jax or torch")
    p.add_argument("--dataset", required=True, choices=sorted(datasets.REGISTRY))
    p.add_argument("--model", choices=sorted(models.MODELS), help="default: the dataset's model")
    p.add_argument("--batch-size", type=_number(int, 0, strict=True), default=defaults["batch_size"].default)
    p.add_argument("--lr", type=_number(float, 0, strict=True), default=defaults["lr"].default)
    p.add_argument("--epochs", type=_number(int, 0, strict=True), default=defaults["epochs"].default)
    p.add_argument("--optimizer", choices=OPTIMIZERS, default=defaults["optimizer"].default)
    p.add_argument("--momentum", type=_number(float, 0), default=defaults["momentum"].default)
    p.add_argument("--weight-decay", type=_number(float, 0), default=defaults["weight_decay"].default,
                   help="L2 lambda: (lambda/2)|w|^2 is added to the loss")
    p.add_argument("--lr-policy", choices=LR_POLICIES, default=defaults["lr_policy"].default)
    p.add_argument("--gamma", type=_number(float, 0), default=defaults["gamma"].default)
    p.add_argument("--power", type=_number(float, 0), default=defaults["power"].default)
    p.add_argument("--stepsize", type=_number(int, 0, strict=True), default=defaults["stepsize"].default)
    p.add_argument("--stepvalues", type=_int_list, default=(), help="multistep: e.g. 4000,6000")
    p.add_argument("--val-fraction", type=_number(float, 0), default=0.0)
    p.add_argument("--seed", type=_number(int, 0), default=0)
    p.add_argument("--init", choices=("neutral", "framework"), default="neutral",
                   help="neutral: the same numpy weights in every framework; framework: its own initialiser")
    p.add_argument("--device", default="cpu", help="cpu, gpu or gpu:N")
    p.add_argument("--threads", type=_number(int, 0), default=0, help="0: every core available")
    p.add_argument("--timeout", type=_number(float, 0, strict=True), help="wall-clock seconds")
    p.add_argument("--data-dir", help="folder of official dataset files (default $SENSITIVITY_DATA_DIR)")
    p.add_argument("--json", action="store_true", help="print the TrialResult as one line of JSON")
    p.set_defaults(handler=_cmd_trial)


def _spec_from_args(args) -> TrialSpec:
    from pydantic import ValidationError

    fields = {name: getattr(args, name) for name in TrialSpec.model_fields if hasattr(args, name)}
    try:
        return TrialSpec(**fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        message = error["msg"].removeprefix("Value error, ")
        if error["loc"]:
            message = f"{_option(error['loc'][0])}: {message}"
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


def build_parser() -> Parser:
    parser = Parser(prog="sensitivity", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _add_trial_parser(commands)
    _add_listing_parsers(commands)
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
