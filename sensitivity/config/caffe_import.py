"""Caffe enters through its files: a solver (and its net) become a sensitivity configuration.

No Caffe engine installs here, but its solver and net files say what Caffe's defaults are, and every
other framework can run them. Fields that do not change training are accepted and listed as ignored; a
field or layer that would change training and is not supported is an error naming it and its line.
Two things Caffe's examples do that no adapter reproduces are accepted and listed as `not_reproduced`,
so a reader sees them: per-parameter learning-rate multipliers (biases at lr_mult 2) and mean-image
subtraction or another input scale (every framework here takes inputs scaled to [0, 1]).
The output has the defaults table's schema (framework, source with project, example and file, config), its
config holding the network too so that `sensitivity trial --config` runs it; `table_entry` makes it a complete
table entry, and `import_phases` reads solvers that resume one another as one multistep schedule. The net is read
in `caffe_net`.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from sensitivity.config.caffe_net import CaffeImportError, import_net, is_scalar, read_message, read_number, shown
from sensitivity.core.spec import TrialSpec
from sensitivity.datasets.registry import OFFICIAL_TRAIN_SIZE


SOLVER_IGNORED = {
    "display", "average_loss", "test_iter", "test_interval", "test_initialization", "test_compute_loss",
    "test_net", "test_state", "train_state", "snapshot", "snapshot_prefix", "snapshot_diff", "snapshot_format",
    "snapshot_after_train", "solver_mode", "device_id", "debug_info", "layer_wise_reduce", "weights",
}
SOLVER_TYPES = {"SGD": "momentum", "Nesterov": "nesterov", "Adam": "adam", "RMSProp": "rmsprop"}
# Old Caffe's `solver_type` enum, by number and by name, as the `type` string.
SOLVER_ENUM_TYPES = {"0": "SGD", "1": "Nesterov", "2": "AdaGrad", "3": "RMSProp", "4": "AdaDelta", "5": "Adam",
                     "SGD": "SGD", "NESTEROV": "Nesterov", "ADAGRAD": "AdaGrad", "RMSPROP": "RMSProp",
                     "ADADELTA": "AdaDelta", "ADAM": "Adam"}
POLICIES = ("fixed", "step", "multistep", "inv", "exp")
# Solver fields read as numbers: the configuration field and the kind of number.
SOLVER_NUMBERS = {"base_lr": ("lr", float), "momentum": ("momentum", float), "weight_decay": ("weight_decay", float),
                  "gamma": ("gamma", float), "power": ("power", float), "stepsize": ("stepsize", int),
                  "stepvalue": ("stepvalues", int), "max_iter": ("iterations", int), "random_seed": ("seed", int)}
CAFFE_NAMES = {field: name for name, (field, _) in SOLVER_NUMBERS.items()}
# What each policy needs and Caffe does not default usefully (its gamma, power and stepsize default to 0).
POLICY_NEEDS = {"step": ("stepsize", "gamma"), "multistep": ("stepvalue", "gamma"), "inv": ("gamma", "power"),
                "exp": ("gamma",)}
# Values Caffe lets a solver change that are fixed in the canonical formulas (sensitivity.core.optim).
CANONICAL = {"delta": 1e-8, "momentum2": 0.999, "rms_decay": 0.9, "iter_size": 1, "regularization_type": "L2"}


def import_solver(solver_path, net_path=None) -> dict:
    """The configuration a Caffe solver describes, in the defaults-table schema, with the network of
    `net_path` (an error if it is missing), else of the solver's `net:` when that lies beside the solver."""
    solver_path = Path(solver_path)
    solver = read_message(solver_path)
    config, ignored, not_reproduced = {}, [], []
    optimizer_type = "SGD"
    for name, value, line in solver.fields:
        where = f"{solver_path}:{line}"
        if name in SOLVER_IGNORED:
            ignored.append(f"{name} (line {line})")
        elif name in SOLVER_NUMBERS:
            field, kind = SOLVER_NUMBERS[name]
            number = read_number(value, kind, where, name)
            if field == "seed" and number < 0:  # Caffe's -1 (its default): a seed of its own choosing
                ignored.append(f"{name} {number} (line {line}, not a seed)")
            elif field == "stepvalues":
                config.setdefault("stepvalues", []).append(number)
            else:
                config[field] = number
        elif name == "lr_policy":
            if not isinstance(value, str) or value not in POLICIES:
                raise CaffeImportError(f"{where}: lr_policy {shown(value)} is not supported; "
                                       f"allowed: {', '.join(POLICIES)}")
            config["lr_policy"] = value
        elif name in ("type", "solver_type"):
            optimizer_type = SOLVER_ENUM_TYPES.get(str(value), str(value)) if is_scalar(value) else None
            if optimizer_type not in SOLVER_TYPES:
                raise CaffeImportError(f"{where}: solver type {shown(value)} is not supported; "
                                       f"allowed: {', '.join(SOLVER_TYPES)}")
        elif name in ("net", "train_net"):
            if not isinstance(value, str):
                raise CaffeImportError(f"{where}: {name} {shown(value)}: expected a quoted path")
            net_path = net_path if net_path is not None else _beside(solver_path, value, where)
        elif name in CANONICAL:
            if value != CANONICAL[name]:
                raise CaffeImportError(f"{where}: {name} {value} is not supported: the canonical value is "
                                       f"{CANONICAL[name]}")
            ignored.append(f"{name} (line {line}, the canonical value)")
        else:
            raise CaffeImportError(f"{where}: field {name!r} changes training and is not supported")
    if "lr" not in config:
        raise CaffeImportError(f"{solver_path}: base_lr is required (Caffe's default, 0, does not train)")
    policy = config.get("lr_policy")
    for needed in POLICY_NEEDS.get(policy, ()):
        if {"stepvalue": "stepvalues"}.get(needed, needed) not in config:
            raise CaffeImportError(f"{solver_path}:{solver.line_of('lr_policy')}: lr_policy {policy} needs {needed}")
    config["optimizer"] = _optimizer(optimizer_type, config, solver, solver_path)
    result = {"framework": "caffe", "source": {"project": "Caffe", "example": solver_path.stem,
                                               "file": str(solver_path)},
              "config": config, "not_reproduced": not_reproduced, "ignored": ignored}
    if net_path is not None:  # given (a missing file is an error) or found beside the solver
        net = import_net(net_path)
        result["source"].update(example=net["name"], net=str(net_path))
        config["batch_size"] = net["batch_size"]
        config.update(net["model"])
        result["ignored"] += net["ignored"]
        result["not_reproduced"] += net["not_reproduced"]
    else:
        result["note"] = "no net file: max_iter stays in iterations and the batch size is unknown"
    return check_config(result, solver_path)


def import_phases(solver_paths, net_path=None) -> dict:
    """Solvers run one after another, each resuming the last one's snapshot at a fixed rate (Caffe's
    train_quick.sh: to 4,000 iterations at 1e-3, then to 5,000 at 1e-4), as one multistep schedule."""
    phases = [import_solver(path, net_path) for path in solver_paths]
    entry = phases[0]
    if len(phases) == 1:
        return entry
    configs = [phase["config"] for phase in phases]
    ends = [config.get("iterations", 0) for config in configs]
    ratios = [b["lr"] / a["lr"] for a, b in zip(configs, configs[1:])]
    rest = [{k: v for k, v in config.items() if k not in ("lr", "iterations")} for config in configs]
    for path, config, end, previous in zip(solver_paths[1:], rest[1:], ends[1:], ends):
        if config != rest[0] or config.get("lr_policy", "fixed") != "fixed" or end <= previous:
            raise CaffeImportError(f"{path}: a continuation must resume a fixed-rate solver with the same settings "
                                   "but base_lr, and a larger max_iter")
    if any(abs(ratio - ratios[0]) > 1e-9 * ratios[0] for ratio in ratios):
        raise CaffeImportError(f"{solver_paths[-1]}: the rate changes by different factors between phases")
    entry["config"].update(lr_policy="multistep", gamma=float(f"{ratios[0]:.12g}"), stepvalues=ends[:-1],
                           iterations=ends[-1])
    entry["source"]["file"] = " then ".join(str(path) for path in solver_paths)
    for phase in phases[1:]:
        entry["not_reproduced"] += [item for item in phase["not_reproduced"] if item not in entry["not_reproduced"]]
    return check_config(entry, solver_paths[-1])


def table_entry(imported: dict, name: str, dataset: str) -> dict:
    """An imported configuration as a complete defaults-table entry: its network becomes `original_model`
    (a default moves between datasets, not its network), what is not reproduced becomes its notes, and for an
    official dataset its `train_size` is that dataset's training set (Caffe's examples train on all of it)."""
    config = {k: v for k, v in imported["config"].items() if k not in ("model", "layers")}
    model = imported["config"].get("model", "unknown (no net file)")
    if "layers" in imported["config"]:
        model = f"{model} (not a registered model: {len(imported['config']['layers'])} layers)"

    entry = {"name": name, "framework": "caffe", "runs_on": "all", "dataset": dataset, "source": imported["source"],
             "config": config, "original_model": model,
             "notes": list(imported["not_reproduced"]) + ([imported["note"]] if "note" in imported else [])}
    if dataset in OFFICIAL_TRAIN_SIZE:  # its steps are steps of the official training set: the budget in epochs
        entry["train_size"] = OFFICIAL_TRAIN_SIZE[dataset]
    return entry


def _optimizer(kind: str, config: dict, solver, solver_path) -> str:
    """The canonical optimizer of a Caffe solver type; Caffe's defaults where they are not the canonical ones
    (momentum 0, rms_decay 0.99) are errors rather than silently other values."""
    momentum = config.get("momentum", 0.0)  # Caffe's default
    type_line = next((line for key, _, line in solver.fields if key in ("type", "solver_type")), solver.line)
    where = f"{solver_path}:{solver.line_of('momentum') if 'momentum' in config else type_line}"
    if kind in ("SGD", "Nesterov"):
        return "sgd" if momentum == 0 else SOLVER_TYPES[kind]
    if kind == "Adam":
        if momentum != 0.9:
            raise CaffeImportError(f"{where}: Adam's momentum (beta1) {momentum} is not supported: the canonical "
                                   "value is 0.9")
        del config["momentum"]
    if kind == "RMSProp":
        if momentum != 0:
            raise CaffeImportError(f"{where}: RMSProp with momentum {momentum} is not supported (nor is it by Caffe)")
        config.pop("momentum", None)
        if solver.get("rms_decay") is None:
            raise CaffeImportError(f"{solver_path}:{type_line}: RMSProp without rms_decay is Caffe's "
                                   "0.99, which is not supported: the canonical value is 0.9")
    return SOLVER_TYPES[kind]


def _beside(solver_path: Path, net: str, where: str):
    """Caffe's net path is relative to Caffe's root: look beside the solver, by path and by name. What is found
    must be a regular file in the solver's folder (or below it), else CaffeImportError, the file unread; a net
    found nowhere is None (the import notes it)."""
    folder = solver_path.parent.resolve()
    for candidate in (solver_path.parent / net, solver_path.parent / Path(net).name):
        try:
            if not candidate.exists():
                continue
            found = candidate.resolve()
        except (OSError, ValueError, RuntimeError):  # a name too long, a NUL, a loop of links
            continue
        if not found.is_relative_to(folder):
            raise CaffeImportError(f"{where}: net {shown(net)} lies outside the solver's folder {folder}; put the "
                                   "net file beside the solver")
        if not found.is_file():
            raise CaffeImportError(f"{where}: net {shown(net)} is not a regular file")
        return candidate
    return None


def check_config(entry: dict, where, dataset=None) -> dict:
    """`entry` if its configuration is one TrialSpec accepts (on any framework), else CaffeImportError naming
    the Caffe field: nothing is written that a trial would refuse."""
    fields = {k: v for k, v in entry["config"].items() if k != "framework"}
    try:
        TrialSpec(framework="caffe", dataset=dataset or "caffe", **fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        name = CAFFE_NAMES.get(field, field)
        message = error["msg"].removeprefix("Value error, ")
        raise CaffeImportError(f"{where}: {name + ': ' if name else ''}{message}") from None
    return entry
