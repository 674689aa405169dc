"""Framework-neutral model specifications, their shapes, sizes, costs and initial weights.

A ModelSpec is a plain sequence of layers. Every adapter builds it natively, and every framework starts
from the same numpy weights drawn from the seed. Neutral layouts: images NCHW, convolution kernels
(out, in, kh, kw), dense kernels (in, out), and Flatten takes NCHW order (C, H, W); an NHWC framework
(TensorFlow, Keras, JAX) converts images and kernels with `to_nhwc`, `from_nhwc`, `nhwc_kernel` and
`neutral_kernel`, which permutes the first dense kernel after a Flatten (`nhwc_dense_rows`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import numpy as np

from sensitivity.core.semantics import fans


@dataclass(frozen=True)
class Conv:
    out_channels: int
    kernel: int
    stride: int = 1
    pad: int = 0


@dataclass(frozen=True)
class Pool:
    kind: str  # "max" or "avg"
    kernel: int
    stride: int
    ceil: bool = True  # Caffe rounds the output size up; frameworks that floor must pad to match


@dataclass(frozen=True)
class Dense:
    units: int


@dataclass(frozen=True)
class ReLU:
    pass


@dataclass(frozen=True)
class Flatten:
    pass


@dataclass(frozen=True)
class Dropout:
    rate: float


Layer = Union[Conv, Pool, Dense, ReLU, Flatten, Dropout]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    layers: tuple

    def shapes(self, input_shape: tuple) -> list:
        """Output shape (without batch) after each layer; raises ValueError when a layer does not fit."""
        shape, out = tuple(input_shape), []
        for i, layer in enumerate(self.layers):
            shape = _output_shape(layer, shape)
            if any(n <= 0 for n in shape):
                raise ValueError(f"layer {i} ({type(layer).__name__}) would output {shape}")
            out.append(shape)
        return out

    def param_shapes(self, input_shape: tuple, classes: int) -> list:
        """[(kernel_shape, bias_shape)] for each Conv and Dense, in order, in neutral layout."""
        return [shapes for _, shapes, _ in self._weighted(input_shape, classes)]

    def param_count(self, input_shape: tuple, classes: int) -> int:
        return sum(math.prod(k) + math.prod(b) for k, b in self.param_shapes(input_shape, classes))

    def flops_per_sample(self, input_shape: tuple, classes: int) -> int:
        """Forward multiply-adds of convolutions and dense layers, counted as 2 FLOPs each."""
        return sum(flops for _, _, flops in self._weighted(input_shape, classes))

    def resolve(self, classes: int) -> "ModelSpec":
        """The spec with its last Dense sized to the number of classes."""
        layers = list(self.layers)
        last = max(i for i, layer in enumerate(layers) if isinstance(layer, Dense))
        layers[last] = Dense(classes)
        return ModelSpec(self.name, tuple(layers))

    def _weighted(self, input_shape: tuple, classes: int):
        spec = self.resolve(classes)
        shape = tuple(input_shape)
        for layer in spec.layers:
            out = _output_shape(layer, shape)
            if isinstance(layer, Conv):
                k = (layer.out_channels, shape[0], layer.kernel, layer.kernel)
                yield layer, (k, (layer.out_channels,)), 2 * math.prod(k) * out[1] * out[2]
            elif isinstance(layer, Dense):
                yield layer, ((shape[0], layer.units), (layer.units,)), 2 * shape[0] * layer.units
            shape = out


def pooled_size(size: int, kernel: int, stride: int, ceil: bool) -> int:
    """Caffe's pooling output size (ceil) or the usual floor; a window never starts in the padding."""
    rounding = math.ceil if ceil else math.floor
    out = int(rounding((size - kernel) / stride)) + 1
    if ceil and (out - 1) * stride >= size:
        out -= 1
    return out


def ceil_padding(layer: Pool, size: int) -> int:
    """Padding at the end of an axis of `size` (bottom or right) after which a framework's floor-rounded
    'valid' pooling gives Caffe's output size: what every framework without a ceil mode adds."""
    out = pooled_size(size, layer.kernel, layer.stride, layer.ceil)
    return max((out - 1) * layer.stride + layer.kernel - size, 0)


def same_is_caffe(layer: Pool, chw: tuple) -> bool:
    """Whether 'same' pooling (TensorFlow's and Keras') gives Caffe's ceil output: the same output size and no
    padding before the first window ('same' puts floor(total/2) of the padding before: none under 2)."""
    return all(pooled_size(n, layer.kernel, layer.stride, layer.ceil) == math.ceil(n / layer.stride)
               and ceil_padding(layer, n) < 2 for n in chw[1:])


def window_counts(layer: Pool, size: int) -> np.ndarray:
    """How many in-image inputs each pooling window covers along an axis of `size`: Caffe's divisor of an
    average at the edge (the kernel size inside the image)."""
    starts = np.arange(pooled_size(size, layer.kernel, layer.stride, layer.ceil)) * layer.stride
    return np.minimum(starts + layer.kernel, size) - starts


def _output_shape(layer, shape: tuple) -> tuple:
    if isinstance(layer, Conv):
        if len(shape) != 3:
            raise ValueError(f"Conv needs an image input (C, H, W), got {shape}")
        c, h, w = shape
        size = lambda n: (n + 2 * layer.pad - layer.kernel) // layer.stride + 1  # noqa: E731
        return (layer.out_channels, size(h), size(w))
    if isinstance(layer, Pool):
        c, h, w = shape
        return (c, pooled_size(h, layer.kernel, layer.stride, layer.ceil),
                pooled_size(w, layer.kernel, layer.stride, layer.ceil))
    if isinstance(layer, Flatten):
        return (math.prod(shape),)
    if isinstance(layer, Dense):
        if len(shape) != 1:
            raise ValueError(f"Dense needs a flat input, got {shape}: put a Flatten before it")
        return (layer.units,)
    return shape


def init_weights(spec: ModelSpec, input_shape: tuple, classes: int, seed: int) -> list:
    """Neutral initial weights from the seed: kernels uniform in +-sqrt(3/fan_in), biases zero.

    This is Caffe's "xavier" filler with its default fan-in norm (variance 1/fan_in). Returns
    [(kernel, bias)] as float32 arrays in neutral layout.
    """
    rng = np.random.default_rng(seed)
    weights = []
    for kernel_shape, bias_shape in spec.param_shapes(input_shape, classes):
        fan_in = math.prod(kernel_shape[1:]) if len(kernel_shape) == 4 else kernel_shape[0]
        limit = math.sqrt(3.0 / fan_in)
        kernel = rng.uniform(-limit, limit, size=kernel_shape).astype(np.float32)
        weights.append((kernel, np.zeros(bias_shape, np.float32)))
    return weights


def glorot_uniform(param_shapes: list, seed: int) -> list:
    """The initialiser of Theano's deep-learning tutorials (PyTensor ships none and inherits it): kernels
    uniform in +-sqrt(6/(fan_in+fan_out)) drawn by numpy's RandomState, biases zero, as float32."""
    rng, out = np.random.RandomState(seed), []
    for kernel_shape, bias_shape in param_shapes:
        bound = math.sqrt(6.0 / sum(fans(kernel_shape)))
        out.append((rng.uniform(-bound, bound, kernel_shape).astype(np.float32), np.zeros(bias_shape, np.float32)))
    return out


def nhwc_dense_rows(kernel: np.ndarray, chw: tuple) -> np.ndarray:
    """Reorder the rows of a dense kernel that follows a Flatten from (C, H, W) order to (H, W, C)."""
    c, h, w = chw
    return kernel.reshape(c, h, w, -1).transpose(1, 2, 0, 3).reshape(c * h * w, -1)


def to_nhwc(x: np.ndarray) -> np.ndarray:
    """NCHW images as NHWC (vectors as they are)."""
    return np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if x.ndim == 4 else x


def from_nhwc(x: np.ndarray) -> np.ndarray:
    """NHWC images (an input gradient, say) back as NCHW (vectors as they are)."""
    return x.transpose(0, 3, 1, 2) if x.ndim == 4 else x


def nhwc_kernel(kernel: np.ndarray, chw=None) -> np.ndarray:
    """A neutral kernel in an NHWC framework's layout: a convolution's (out, in, kh, kw) as
    (kh, kw, in, out); a dense kernel after a Flatten of `chw` with its rows in (H, W, C) order."""
    if kernel.ndim == 4:
        return kernel.transpose(2, 3, 1, 0)
    return nhwc_dense_rows(kernel, chw) if chw else kernel


def neutral_kernel(kernel: np.ndarray, chw=None) -> np.ndarray:
    """The inverse of `nhwc_kernel`: an NHWC framework's kernel in the neutral layout."""
    if kernel.ndim == 4:
        return np.ascontiguousarray(kernel.transpose(3, 2, 0, 1))
    if chw:
        c, h, w = chw
        kernel = kernel.reshape(h, w, c, -1).transpose(2, 0, 1, 3).reshape(c * h * w, -1)
    return np.ascontiguousarray(kernel)


MODELS = {
    # Caffe's LeNet (examples/mnist/lenet_train_test.prototxt): no activation after the convolutions.
    "lenet5": ModelSpec("lenet5", (
        Conv(20, 5), Pool("max", 2, 2), Conv(50, 5), Pool("max", 2, 2),
        Flatten(), Dense(500), ReLU(), Dense(10),
    )),
    # TensorFlow's "Deep MNIST for experts" tutorial: SAME convolutions, ReLU, dropout 0.5.
    "tf_mnist_deep": ModelSpec("tf_mnist_deep", (
        Conv(32, 5, pad=2), ReLU(), Pool("max", 2, 2), Conv(64, 5, pad=2), ReLU(), Pool("max", 2, 2),
        Flatten(), Dense(1024), ReLU(), Dropout(0.5), Dense(10),
    )),
    # Caffe's cifar10_quick (examples/cifar10/cifar10_quick_train_test.prototxt), pooling rounded up.
    "cifar10_quick": ModelSpec("cifar10_quick", (
        Conv(32, 5, pad=2), Pool("max", 3, 2), ReLU(),
        Conv(32, 5, pad=2), ReLU(), Pool("avg", 3, 2),
        Conv(64, 5, pad=2), ReLU(), Pool("avg", 3, 2),
        Flatten(), Dense(64), Dense(10),
    )),
    # A plain multi-layer perceptron for the small vector sets (digits, mnist1d).
    "mlp": ModelSpec("mlp", (Flatten(), Dense(512), ReLU(), Dense(256), ReLU(), Dense(10))),
}


LAYER_TYPES = {cls.__name__: cls for cls in (Conv, Pool, Dense, ReLU, Flatten, Dropout)}


def layers_to_dicts(model: ModelSpec) -> tuple:
    """The layers as plain dicts ({"type": "Conv", "out_channels": 20, ...}) for JSON and YAML."""
    return tuple({"type": type(layer).__name__, **vars(layer)} for layer in model.layers)


def layers_from_dicts(name: str, layers) -> ModelSpec:
    built = []
    for i, layer in enumerate(layers):
        fields = dict(layer)
        kind = fields.pop("type", None)
        if kind not in LAYER_TYPES:
            raise ValueError(f"layer {i}: type {kind!r}; allowed: {', '.join(LAYER_TYPES)}")
        try:
            built.append(LAYER_TYPES[kind](**fields))
        except TypeError as exc:
            raise ValueError(f"layer {i} ({kind}): {exc}") from None
    return ModelSpec(name, tuple(built))


def get_model(name: str) -> ModelSpec:
    if name not in MODELS:
        raise KeyError(f"unknown model {name!r}; allowed: {', '.join(MODELS)}")
    return MODELS[name]
