"""Caffe enters through its files: a solver (and its net) become a sensitivity configuration.

No Caffe engine installs here, but its solver and net files say what Caffe's defaults are, and every
other framework can run them. Fields that do not change training are accepted and listed as ignored; a
field or layer that would change training and is not supported is an error naming it and its line.
Two things Caffe's examples do that no adapter reproduces are accepted and listed as `not_reproduced`,
so a reader sees them: per-parameter learning-rate multipliers (biases at lr_mult 2) and mean-image
subtraction or another input scale (every framework here takes inputs scaled to [0, 1]).
The output has the defaults table's schema (framework, source with project, example and file, config), its
config holding the network too so that `sensitivity trial --config` runs it; `table_entry` makes it a complete
table entry, and `import_phases` reads solvers that resume one another as one multistep schedule.
"""
from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from sensitivity.config import prototxt
from sensitivity.config.files import read_text
from sensitivity.core.models import MODELS, Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, layers_to_dicts
from sensitivity.core.spec import TrialSpec
from sensitivity.datasets.registry import OFFICIAL_TRAIN_SIZE


class CaffeImportError(ValueError):
    """Unsupported or malformed input; the message names the file, the field and its line."""


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
# The net: a whitelist of keys per message. READ: the importer reads it; IGNORED (FILLER): it does not change
# training and is listed as ignored; a tuple: the only values supported. Any other key or value would change
# training and is an error naming it, its layer and its line.
READ, IGNORED, FILLER = "read", "ignored", "filler"
NET_KEYS = {"name", "layer", "layers", "force_backward", "debug_info", "state", "input", "input_dim", "input_shape"}
LAYER_KEYS = {"name", "type", "bottom", "top", "include", "exclude", "phase"}
WEIGHTED = {"Convolution", "InnerProduct"}
SQUARE = {f"{key}{suffix}": READ for key in ("kernel", "stride", "pad") for suffix in ("_h", "_w")}
PARAM_RULES = {
    "param": {"lr_mult": READ, "decay_mult": (1,)},
    "convolution_param": {"num_output": READ, "kernel_size": READ, "stride": READ, "pad": READ, **SQUARE,
                          "weight_filler": FILLER, "bias_filler": FILLER, "engine": IGNORED, "force_nd_im2col": IGNORED,
                          "bias_term": (True,), "group": (1,), "dilation": (1,), "axis": (1,)},
    "pooling_param": {"pool": ("MAX", "AVE"), "kernel_size": READ, "stride": READ, **SQUARE, "pad": (0,),
                      "pad_h": (0,), "pad_w": (0,), "global_pooling": (False,), "round_mode": ("CEIL",),
                      "engine": IGNORED},
    "inner_product_param": {"num_output": READ, "weight_filler": FILLER, "bias_filler": FILLER, "bias_term": (True,),
                            "axis": (1,), "transpose": (False,)},
    "relu_param": {"negative_slope": (0,), "engine": IGNORED},
    "dropout_param": {"dropout_ratio": READ, "scale_train": (True,)},
    "softmax_param": {"axis": (1,), "engine": IGNORED},
    "loss_param": {"normalization": ("VALID", "BATCH_SIZE"), "normalize": (True,)},
    "transform_param": {"scale": READ, "mean_file": READ, "mean_value": READ, "mirror": (False,), "crop_size": (0,),
                        "force_color": (False,), "force_gray": (False,)},
    "data_param": {"batch_size": READ, "source": IGNORED, "backend": IGNORED, "prefetch": IGNORED,
                   "rand_skip": IGNORED},
    "image_data_param": {"batch_size": READ, "source": IGNORED, "root_folder": IGNORED, "shuffle": IGNORED,
                         "rand_skip": IGNORED, "new_height": (0,), "new_width": (0,), "is_color": (True,)},
    "memory_data_param": {"batch_size": READ, "channels": IGNORED, "height": IGNORED, "width": IGNORED},
    "hdf5_data_param": {"batch_size": READ, "source": IGNORED, "shuffle": IGNORED},
    "input_param": {"shape": READ},
    "dummy_data_param": {"shape": READ, "data_filler": IGNORED},
}
DATA_PARAMS = {"Data": "data_param", "ImageData": "image_data_param", "MemoryData": "memory_data_param",
               "HDF5Data": "hdf5_data_param", "Input": "input_param", "DummyData": "dummy_data_param"}
LAYER_PARAMS = {"Convolution": ("convolution_param",), "Pooling": ("pooling_param",),
                "InnerProduct": ("inner_product_param",), "ReLU": ("relu_param",), "Dropout": ("dropout_param",),
                "SoftmaxWithLoss": ("softmax_param", "loss_param"),
                **{kind: (param, "transform_param") for kind, param in DATA_PARAMS.items()}}
IGNORED_LAYERS = {"Accuracy", "Softmax", "Silence"}
MAX_SIZE = 1_048_576  # a layer's size, kernel, stride or pad, a batch: far above any real net


def import_solver(solver_path, net_path=None) -> dict:
    """The configuration a Caffe solver describes, in the defaults-table schema, with the network of
    `net_path` (an error if it is missing), else of the solver's `net:` when that lies beside the solver."""
    solver_path = Path(solver_path)
    solver = _read(solver_path)
    config, ignored, not_reproduced = {}, [], []
    optimizer_type = "SGD"
    for name, value, line in solver.fields:
        where = f"{solver_path}:{line}"
        if name in SOLVER_IGNORED:
            ignored.append(f"{name} (line {line})")
        elif name in SOLVER_NUMBERS:
            field, kind = SOLVER_NUMBERS[name]
            number = _number(value, kind, where, name)
            if field == "seed" and number < 0:  # Caffe's -1 (its default): a seed of its own choosing
                ignored.append(f"{name} {number} (line {line}, not a seed)")
            elif field == "stepvalues":
                config.setdefault("stepvalues", []).append(number)
            else:
                config[field] = number
        elif name == "lr_policy":
            if not isinstance(value, str) or value not in POLICIES:
                raise CaffeImportError(f"{where}: lr_policy {_shown(value)} is not supported; "
                                       f"allowed: {', '.join(POLICIES)}")
            config["lr_policy"] = value
        elif name in ("type", "solver_type"):
            optimizer_type = SOLVER_ENUM_TYPES.get(str(value), str(value)) if _scalar(value) else None
            if optimizer_type not in SOLVER_TYPES:
                raise CaffeImportError(f"{where}: solver type {_shown(value)} is not supported; "
                                       f"allowed: {', '.join(SOLVER_TYPES)}")
        elif name in ("net", "train_net"):
            if not isinstance(value, str):
                raise CaffeImportError(f"{where}: {name} {_shown(value)}: expected a quoted path")
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


def import_net(net_path) -> dict:
    """A Caffe net's training phase as a ModelSpec (a registered model's name when it is one)."""
    net_path = Path(net_path)
    net = _read(net_path)
    layers, notes, batch_size = [], _Notes(net_path), None
    lr_mults = {}
    for key, value, line in net.fields:
        if key not in NET_KEYS:
            raise CaffeImportError(f"{net_path}:{line}: field {key} of the net changes training and is not supported")
    for layer in _messages(net, "layer", net_path) or _messages(net, "layers", net_path):
        kind, line = str(layer.get("type")), layer.line_of("type")
        name = str(layer.get("name", kind))
        if not _in_training(layer, net_path):
            continue
        if kind in IGNORED_LAYERS:
            notes.ignored.append(f"{kind} layer {name!r} (line {line})")
            continue
        if kind not in LAYER_PARAMS:
            raise CaffeImportError(f"{net_path}:{line}: layer type {kind!r} is not supported")
        own = LAYER_PARAMS[kind]
        for key, value, key_line in layer.fields:
            if key in LAYER_KEYS or key in own or (key == "param" and kind in WEIGHTED):
                continue
            rule = {"loss_weight": (1,)}.get(key, ()) if kind == "SoftmaxWithLoss" else ()
            notes.check(key, value, rule, name, key_line)
        for param in _messages(layer, "param", net_path):
            notes.check_message(param, PARAM_RULES["param"], name)
            lr_mult = _number(param.get("lr_mult", 1), float, f"{net_path}:{param.line_of('lr_mult')}", "lr_mult")
            lr_mults.setdefault(lr_mult, []).append(param.line_of("lr_mult"))
        p = {message: (_messages(layer, message, net_path) or [prototxt.Message(line=line)])[0] for message in own}
        for message in own:
            notes.check_message(p[message], PARAM_RULES[message], name)
        if kind in DATA_PARAMS:
            batch_size = _batch_size(p[own[0]], name, f"{net_path}:{line}")
            notes.transform(p["transform_param"], name)
        elif kind == "Convolution":
            c = p["convolution_param"]
            kernel = _square(c, "kernel", None, name, notes)
            layers.append(Conv(_size(c, "num_output", name, net_path), kernel,
                               _square(c, "stride", 1, name, notes), _square(c, "pad", 0, name, notes, minimum=0)))
        elif kind == "Pooling":
            c = p["pooling_param"]
            layers.append(Pool({"MAX": "max", "AVE": "avg"}[c.get("pool", "MAX")], _square(c, "kernel", None, name, notes),
                               _square(c, "stride", 1, name, notes), ceil=True))
        elif kind == "InnerProduct":
            if not any(isinstance(previous, Flatten) for previous in layers):
                layers.append(Flatten())  # Caffe's InnerProduct flattens its input itself
            layers.append(Dense(_size(p["inner_product_param"], "num_output", name, net_path)))
        elif kind == "ReLU":
            layers.append(ReLU())
        elif kind == "Dropout":
            c = p["dropout_param"]
            where = f"{net_path}:{c.line_of('dropout_ratio')}"
            rate = _number(c.get("dropout_ratio", 0.5), float, where, "dropout_ratio")
            if not 0 <= rate < 1:
                raise CaffeImportError(f"{where}: dropout_ratio of layer {name}: {rate} is outside [0, 1)")
            layers.append(Dropout(rate))
        # SoftmaxWithLoss: the cross-entropy every adapter trains with
    if batch_size is None:
        raise CaffeImportError(f"{net_path}: no training data layer with a batch_size")
    for multiplier, lines in lr_mults.items():
        if multiplier not in (1, 1.0):
            notes.not_reproduced.append(f"lr_mult {multiplier:g} (lines {', '.join(map(str, lines))}) changes training "
                                        "and is not reproduced: every parameter trains at the base rate")
    spec = ModelSpec(str(net.get("name", net_path.stem)), tuple(layers))
    known = next((name for name, model in MODELS.items() if model.layers == spec.layers), None)
    model = {"model": known} if known else {"model": spec.name, "layers": [dict(d) for d in layers_to_dicts(spec)]}
    return {"name": spec.name, "batch_size": int(batch_size), "model": model, "ignored": notes.ignored,
            "not_reproduced": notes.not_reproduced}


class _Notes:
    """Checks a net's fields against the rules, collecting what is ignored or not reproduced."""

    def __init__(self, path):
        self.path, self.ignored, self.not_reproduced = path, [], []

    def check(self, key, value, rule, layer, line):
        if rule == READ:
            return
        if rule in (IGNORED, FILLER):
            why = ": initial weights are the neutral ones" if rule == FILLER else ""
            shown = value.get("type") if isinstance(value, prototxt.Message) else value
            self.ignored.append(f"{key} {shown} of layer {layer} (line {line}){why}")
        elif not any(_same(value, allowed) for allowed in rule):
            raise CaffeImportError(f"{self.path}:{line}: field {key} of layer {layer} changes training "
                                   "and is not supported")

    def check_message(self, message, rules, layer):
        for key, value, line in message.fields:
            self.check(key, value, rules.get(key, ()), layer, line)

    def transform(self, transform, layer):
        """Input scaling and mean subtraction: every framework here takes inputs scaled to [0, 1]."""
        scale = _number(transform.get("scale", 1), float, f"{self.path}:{transform.line_of('scale')}", "scale")
        if 1 / 256 <= scale <= 1 / 255:
            self.ignored.append(f"scale {scale} of layer {layer} (line {transform.line_of('scale')}): inputs "
                                "are scaled to [0, 1] here")
        else:
            self.not_reproduced.append(f"input scale {scale} of layer {layer} (line {transform.line_of('scale')}) "
                                       "changes training and is not reproduced: inputs are scaled to [0, 1] here")
        if transform.get("mean_file") is not None or transform.get_all("mean_value"):
            self.not_reproduced.append(f"mean subtraction of layer {layer} (line {transform.line}) changes "
                                       "training and is not reproduced: inputs are scaled to [0, 1] here")


def _in_training(layer, path) -> bool:
    included = [rule.get("phase") for rule in _messages(layer, "include", path)]
    excluded = [rule.get("phase") for rule in _messages(layer, "exclude", path)]
    return (not included or "TRAIN" in included) and "TRAIN" not in excluded and layer.get("phase", "TRAIN") == "TRAIN"


def _batch_size(data, layer, where):
    if data.get("shape") is not None:  # Input, DummyData: shape { dim: N ... }
        shape = data.get("shape")
        dims = shape.get_all("dim") if isinstance(shape, prototxt.Message) else []
        return _positive(dims[0], f"{where}", f"shape dim of layer {layer}") if dims else None
    if data.get("batch_size") is None:
        raise CaffeImportError(f"{where}: layer {layer} has no batch_size")
    return _positive(data.get("batch_size"), f"{where}", f"batch_size of layer {layer}")


def _size(message, key, layer, path) -> int:
    """A layer's required positive size (num_output)."""
    if message.get(key) is None:
        raise CaffeImportError(f"{path}:{message.line}: layer {layer} needs {key}")
    return _positive(message.get(key), f"{path}:{message.line_of(key)}", f"{key} of layer {layer}")


def _number(value, kind, where: str, name: str):
    """A field's number: `kind` int (a whole number) or float; CaffeImportError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CaffeImportError(f"{where}: {name}: {_shown(value)} is not a number")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise CaffeImportError(f"{where}: {name}: {value} is not a whole number")
    return kind(value)


def _positive(value, where: str, name: str, minimum: int = 1) -> int:
    number = _number(value, int, where, name)
    if not minimum <= number <= MAX_SIZE:
        raise CaffeImportError(f"{where}: {name}: {number} is outside {minimum} to {MAX_SIZE:,}")
    return number


def _scalar(value) -> bool:
    return not isinstance(value, prototxt.Message)


def _shown(value) -> str:
    return "{...}" if isinstance(value, prototxt.Message) else repr(value)[:40]


def _messages(message, key, path) -> list:
    """Every `key { ... }` of `message`; a `key: value` instead is an error naming its line."""
    found = message.get_all(key)
    for value in found:
        if _scalar(value):
            raise CaffeImportError(f"{path}:{message.line_of(key)}: {key} {_shown(value)}: expected {key} {{ ... }}")
    return found


def _square(message, key, default, layer, notes, minimum=1) -> int:
    """kernel, stride or pad: `key`_size (or `key`), or `key`_h equal to `key`_w; Caffe's rectangles are refused."""
    single = "kernel_size" if key == "kernel" else key
    values = message.get_all(single)
    h, w = message.get(f"{key}_h"), message.get(f"{key}_w")
    if h is not None or w is not None:
        line = message.line_of(f"{key}_h" if h is not None else f"{key}_w")
        if values or h is None or w is None or h != w:  # rectangular, half given, or both forms at once
            raise CaffeImportError(f"{notes.path}:{line}: field {key}_h/{key}_w of layer {layer} changes training "
                                   "and is not supported (only equal, square values)")
        values = [h]
    where = f"{notes.path}:{message.line_of(f'{key}_h' if h is not None else single)}"
    values = [_positive(v, where, f"{single} of layer {layer}", minimum) for v in values]
    if len(set(values)) > 1:
        raise CaffeImportError(f"{notes.path}:{message.line_of(single)}: field {single} of layer {layer} changes "
                               "training and is not supported (only one value, a square)")
    if not values and default is None:
        raise CaffeImportError(f"{notes.path}:{message.line}: layer {layer} needs {single}")
    return values[0] if values else default


def _same(value, allowed) -> bool:
    if isinstance(value, bool) or isinstance(allowed, bool):
        return value is allowed
    return value == allowed


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


def _read(path: Path) -> prototxt.Message:
    try:
        message = prototxt.parse(read_text(path, CaffeImportError), str(path))
        prototxt.check_repeats(message, str(path))
        return message
    except prototxt.PrototxtError as exc:
        raise CaffeImportError(str(exc)) from None


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
            raise CaffeImportError(f"{where}: net {_shown(net)} lies outside the solver's folder {folder}; put the "
                                   "net file beside the solver")
        if not found.is_file():
            raise CaffeImportError(f"{where}: net {_shown(net)} is not a regular file")
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
