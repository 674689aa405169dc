"""A Caffe net's training phase as a sensitivity model, and the field readers the solver's import shares.

The net is read against a whitelist of keys per message; a key or value that would change training and is
not supported is an error naming it, its layer and its line.
"""
from __future__ import annotations

from pathlib import Path

from sensitivity.config import prototxt
from sensitivity.config.files import read_text
from sensitivity.core.models import MODELS, Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, layers_to_dicts


class CaffeImportError(ValueError):
    """Unsupported or malformed input; the message names the file, the field and its line."""


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


def import_net(net_path) -> dict:
    """A Caffe net's training phase as a ModelSpec (a registered model's name when it is one)."""
    net_path = Path(net_path)
    net = read_message(net_path)
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
            lr_mult = read_number(param.get("lr_mult", 1), float, f"{net_path}:{param.line_of('lr_mult')}", "lr_mult")
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
            rate = read_number(c.get("dropout_ratio", 0.5), float, where, "dropout_ratio")
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
        scale = read_number(transform.get("scale", 1), float, f"{self.path}:{transform.line_of('scale')}", "scale")
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
        return read_positive(dims[0], f"{where}", f"shape dim of layer {layer}") if dims else None
    if data.get("batch_size") is None:
        raise CaffeImportError(f"{where}: layer {layer} has no batch_size")
    return read_positive(data.get("batch_size"), f"{where}", f"batch_size of layer {layer}")


def _size(message, key, layer, path) -> int:
    """A layer's required positive size (num_output)."""
    if message.get(key) is None:
        raise CaffeImportError(f"{path}:{message.line}: layer {layer} needs {key}")
    return read_positive(message.get(key), f"{path}:{message.line_of(key)}", f"{key} of layer {layer}")


def read_number(value, kind, where: str, name: str):
    """A field's number: `kind` int (a whole number) or float; CaffeImportError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CaffeImportError(f"{where}: {name}: {shown(value)} is not a number")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise CaffeImportError(f"{where}: {name}: {value} is not a whole number")
    return kind(value)


def read_positive(value, where: str, name: str, minimum: int = 1) -> int:
    number = read_number(value, int, where, name)
    if not minimum <= number <= MAX_SIZE:
        raise CaffeImportError(f"{where}: {name}: {number} is outside {minimum} to {MAX_SIZE:,}")
    return number


def is_scalar(value) -> bool:
    return not isinstance(value, prototxt.Message)


def shown(value) -> str:
    return "{...}" if isinstance(value, prototxt.Message) else repr(value)[:40]


def _messages(message, key, path) -> list:
    """Every `key { ... }` of `message`; a `key: value` instead is an error naming its line."""
    found = message.get_all(key)
    for value in found:
        if is_scalar(value):
            raise CaffeImportError(f"{path}:{message.line_of(key)}: {key} {shown(value)}: expected {key} {{ ... }}")
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
    values = [read_positive(v, where, f"{single} of layer {layer}", minimum) for v in values]
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


def read_message(path: Path) -> prototxt.Message:
    try:
        message = prototxt.parse(read_text(path, CaffeImportError), str(path))
        prototxt.check_repeats(message, str(path))
        return message
    except prototxt.PrototxtError as exc:
        raise CaffeImportError(str(exc)) from None
