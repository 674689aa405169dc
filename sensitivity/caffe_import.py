"""Caffe enters through its files: a solver (and its net) become a sensitivity configuration.

No Caffe engine installs here, but its solver and net files say what Caffe's defaults are, and every
other framework can run them. Fields that do not change training are accepted and listed as ignored; a
field or layer that would change training and is not supported is an error naming it and its line.
Two things Caffe's examples do that no adapter reproduces are accepted and listed as `not_reproduced`,
so a reader sees them: per-parameter learning-rate multipliers (biases at lr_mult 2) and mean-image
subtraction (every framework here takes inputs scaled to [0, 1]).
"""
from __future__ import annotations

from pathlib import Path

from sensitivity import prototxt
from sensitivity.models import (MODELS, Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, layers_to_dicts)


class CaffeImportError(ValueError):
    """Unsupported or malformed input; the message names the file, the field and its line."""


SOLVER_IGNORED = {
    "display", "average_loss", "test_iter", "test_interval", "test_initialization", "test_compute_loss",
    "test_net", "test_state", "train_state", "snapshot", "snapshot_prefix", "snapshot_diff", "snapshot_format",
    "snapshot_after_train", "solver_mode", "device_id", "debug_info", "layer_wise_reduce", "weights",
}
SOLVER_TYPES = {"SGD": "momentum", "Nesterov": "nesterov", "Adam": "adam", "RMSProp": "rmsprop"}
SOLVER_ENUM_TYPES = {"0": "SGD", "1": "Nesterov", "2": "AdaGrad", "3": "RMSProp", "4": "AdaDelta", "5": "Adam"}
POLICIES = ("fixed", "step", "multistep", "inv", "exp")
# Values Caffe lets a solver change that are fixed in the canonical formulas (sensitivity.optim).
CANONICAL = {"delta": 1e-8, "momentum2": 0.999, "rms_decay": 0.9, "iter_size": 1, "regularization_type": "L2"}
DATA_LAYERS = {"Data", "ImageData", "MemoryData", "Input", "DummyData", "HDF5Data"}
IGNORED_LAYERS = {"Accuracy", "Softmax", "Silence"}


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
        elif name == "base_lr":
            config["lr"] = float(value)
        elif name == "momentum":
            config["momentum"] = float(value)
        elif name == "weight_decay":
            config["weight_decay"] = float(value)
        elif name == "lr_policy":
            if value not in POLICIES:
                raise CaffeImportError(f"{where}: lr_policy {value!r} is not supported; allowed: {', '.join(POLICIES)}")
            config["lr_policy"] = value
        elif name in ("gamma", "power"):
            config[name] = float(value)
        elif name == "stepsize":
            config["stepsize"] = int(value)
        elif name == "stepvalue":
            config.setdefault("stepvalues", []).append(int(value))
        elif name == "max_iter":
            config["iterations"] = int(value)
        elif name == "random_seed":
            config["seed"] = int(value)
        elif name in ("type", "solver_type"):
            optimizer_type = SOLVER_ENUM_TYPES.get(str(value), str(value))
            if optimizer_type not in SOLVER_TYPES:
                raise CaffeImportError(f"{where}: solver type {value!r} is not supported; "
                                       f"allowed: {', '.join(SOLVER_TYPES)}")
        elif name in ("net", "train_net"):
            net_path = net_path if net_path is not None else _beside(solver_path, str(value))
        elif name in CANONICAL:
            if value != CANONICAL[name]:
                raise CaffeImportError(f"{where}: {name} {value} is not supported: the canonical value is "
                                       f"{CANONICAL[name]}")
            ignored.append(f"{name} (line {line}, the canonical value)")
        else:
            raise CaffeImportError(f"{where}: field {name!r} changes training and is not supported")
    config["optimizer"] = SOLVER_TYPES[optimizer_type]
    if config["optimizer"] == "momentum" and not config.get("momentum"):
        config["optimizer"] = "sgd"
    result = {"framework": "caffe", "source": {"project": "Caffe", "solver": str(solver_path)},
              "config": config, "ignored": ignored, "not_reproduced": not_reproduced}
    if net_path is not None:  # given (a missing file is an error) or found beside the solver
        net = import_net(net_path)
        result["source"]["net"] = str(net_path)
        config["batch_size"] = net["batch_size"]
        config.update(net["model"])
        result["ignored"] += net["ignored"]
        result["not_reproduced"] += net["not_reproduced"]
    else:
        result["note"] = "no net file: max_iter stays in iterations and the batch size is unknown"
    return result


def import_net(net_path) -> dict:
    """A Caffe net's training phase as a ModelSpec (a registered model's name when it is one)."""
    net_path = Path(net_path)
    net = _read(net_path)
    layers, ignored, not_reproduced, batch_size = [], [], [], None
    lr_mults = set()
    for layer in net.get_all("layer") or net.get_all("layers"):
        kind, line = str(layer.get("type")), layer.line_of("type")
        where = f"{net_path}:{line}"
        phases = [include.get("phase") for include in layer.get_all("include")]
        if phases and "TRAIN" not in phases:
            continue
        for param in layer.get_all("param"):
            lr_mults.add((param.get("lr_mult", 1), line))
            if param.get("decay_mult", 1) not in (1, 1.0):
                raise CaffeImportError(f"{where}: decay_mult {param.get('decay_mult')} is not supported")
        if kind in DATA_LAYERS:
            data = layer.get("data_param") or layer.get("image_data_param") or layer.get("memory_data_param")
            batch_size = data.get("batch_size") if data else batch_size
            transform = layer.get("transform_param")
            if transform and (transform.get("mean_file") or transform.get_all("mean_value")):
                not_reproduced.append(f"mean subtraction (line {transform.line}): inputs are scaled to [0, 1] "
                                      "in every framework")
            ignored.append(f"{kind} layer {layer.get('name')!r} source (line {line})")
        elif kind == "Convolution":
            p = layer.get("convolution_param")
            _require(p.get("group", 1) == 1 and p.get("bias_term", True) is True
                     and p.get("dilation", 1) == 1, where, "convolution group, bias_term or dilation")
            layers.append(Conv(int(p.get("num_output")), int(p.get("kernel_size")), int(p.get("stride", 1)),
                               int(p.get("pad", 0))))
            ignored += _fillers(p, line)
        elif kind == "Pooling":
            p = layer.get("pooling_param")
            pool = {"MAX": "max", "AVE": "avg"}.get(p.get("pool", "MAX"))
            _require(pool is not None and p.get("pad", 0) == 0, where, f"pooling {p.get('pool')} with pad")
            layers.append(Pool(pool, int(p.get("kernel_size")), int(p.get("stride", 1)), ceil=True))
        elif kind == "InnerProduct":
            if not any(isinstance(previous, Flatten) for previous in layers):
                layers.append(Flatten())  # Caffe's InnerProduct flattens its input itself
            p = layer.get("inner_product_param")
            layers.append(Dense(int(p.get("num_output"))))
            ignored += _fillers(p, line)
        elif kind == "ReLU":
            p = layer.get("relu_param")
            _require(not p or p.get("negative_slope", 0) == 0, where, "ReLU negative_slope")
            layers.append(ReLU())
        elif kind == "Dropout":
            p = layer.get("dropout_param")
            layers.append(Dropout(float(p.get("dropout_ratio", 0.5)) if p else 0.5))
        elif kind == "SoftmaxWithLoss":
            pass  # the cross-entropy every adapter trains with
        elif kind in IGNORED_LAYERS:
            ignored.append(f"{kind} layer (line {line})")
        else:
            raise CaffeImportError(f"{where}: layer type {kind!r} is not supported")
    if batch_size is None:
        raise CaffeImportError(f"{net_path}: no training data layer with a batch_size")
    multipliers = sorted({(m, line) for m, line in lr_mults if m not in (1, 1.0)}, key=lambda t: t[1])
    if multipliers:
        lines = ", ".join(str(line) for _, line in multipliers)
        not_reproduced.append(f"lr_mult {multipliers[0][0]} (lines {lines}): every parameter trains at the base rate")
    spec = ModelSpec(str(net.get("name", net_path.stem)), tuple(layers))
    known = next((name for name, model in MODELS.items() if model.layers == spec.layers), None)
    model = {"model": known} if known else {"model": spec.name, "layers": [dict(d) for d in layers_to_dicts(spec)]}
    return {"batch_size": int(batch_size), "model": model, "ignored": ignored, "not_reproduced": not_reproduced}


def _read(path: Path) -> prototxt.Message:
    try:
        return prototxt.parse(path.read_text(), str(path))
    except FileNotFoundError:
        raise CaffeImportError(f"{path}: no such file") from None
    except OSError as exc:
        raise CaffeImportError(f"{path}: cannot read: {exc.strerror}") from None
    except prototxt.PrototxtError as exc:
        raise CaffeImportError(str(exc)) from None


def _beside(solver_path: Path, net: str):
    """Caffe's net path is relative to Caffe's root: look beside the solver, by path and by name."""
    for candidate in (solver_path.parent / net, solver_path.parent / Path(net).name):
        if candidate.exists():
            return candidate
    return None


def _fillers(param, line) -> list:
    return [f"{name} {filler.get('type')!r} (line {filler.line}): initial weights are the neutral ones"
            for name in ("weight_filler", "bias_filler") if (filler := param.get(name)) is not None]


def _require(condition: bool, where: str, what: str) -> None:
    if not condition:
        raise CaffeImportError(f"{where}: {what} is not supported")
