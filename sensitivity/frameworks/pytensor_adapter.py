"""PyTensor 3 adapter (Theano's successor): shared variables, one compiled training step, one predict.

PyTensor has no optimizer library and no scheduler, so native is the Theano tutorials' hand-written update
(the canonical Rule) with their Glorot-uniform initialiser (`models.glorot_uniform`), at the loop's rates;
canonical differs only in its initial weights (the neutral numpy ones). Either way the update is
`optim.graph_updates` (`optim.rule_update` on symbolic variables) under the resolved Rule, given the data
loss's gradients; weight decay is a shared scalar that rule_update applies (L2 or decoupled, per the Rule).

PyTensor 3 has no convolution or pooling op, so both are built from its array ops: convolution as im2col
(k*k strided slices stacked, then one matrix product) and pooling as the elementwise maximum or sum of
k*k strided slices, after padding the bottom and right edges to Caffe's ceil size with -inf (max) or
zeros (average, divided by each window's in-image count). Inside the image layers the activations are
CNHW, so the im2col product needs no transposes; NCHW comes back at Flatten.

The learning rate is an input of the step function and momentum and weight decay are shared scalars, so
one compiled function serves every configuration of a model; compiled graphs are cached per (model,
input shape, optimizer, Rule, device) for the life of the process. The training set lives in shared variables;
each step passes only its index vector and the batch is gathered inside the graph.

Backend on CPU: PyTensor's C backend (`Mode(linker="cvm", optimizer="fast_run")`), which compiles LeNet-5's
step and predict several times faster than the default numba backend and runs faster steps
(docs/performance.md); PYTENSOR_FLAGS=mode=JAX|NUMBA selects another. Without a linked
BLAS, the C backend's products call NumPy's OpenBLAS, whose threads `setup` limits with threadpoolctl.
GPU: PyTensor reaches a GPU through its JAX backend, so "gpu[:N]" compiles with mode JAX on JAX's GPU N
(tested here on JAX's CPU only). JAX needs static shapes, so there functions are compiled per batch size,
`compile` runs them once (and restores the weights) so that XLA's compile is not counted as training,
and graphs with dropout are not reused across builds (JAX keeps its own copy of the random state).
"""
from __future__ import annotations

import functools
import math
import os
import weakref

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.compile.mode import Mode, get_mode
from pytensor.gradient import disconnected_grad
from pytensor.tensor.random.utils import RandomStream
from threadpoolctl import threadpool_info, threadpool_limits

from sensitivity.core import semantics
from sensitivity.core.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, ceil_padding, glorot_uniform,
                                     pooled_size, window_counts)
from sensitivity.core.optim import graph_updates, lr_schedule, slot_names
from sensitivity.frameworks.base import EpochStats

pytensor.config.floatX = "float32"
FLOAT = "float32"
EVAL_BATCH = 1000  # the shared loop predicts in batches of this size
_GRAPHS: dict = {}  # (model, input shape, optimizer, rule, device) -> [_Graph]; one adapter at a time each


def _mode(device: str) -> tuple:
    """The compilation mode for `device`, and its name as PYTENSOR_FLAGS would give it."""
    if device != "cpu":
        # lazy: jax
        import jax
        jax.config.update("jax_default_device", jax.devices("gpu")[int(device[4:] or 0)])
        return get_mode("JAX"), "JAX"
    chosen = {flag.split("=")[0].strip() for flag in os.environ.get("PYTENSOR_FLAGS", "").split(",")}
    if chosen & {"mode", "linker"}:  # the user's choice
        config = pytensor.config
        return get_mode(None), f"mode={config.mode}, linker={config.linker}, optimizer={config.optimizer}"
    return Mode(linker="cvm", optimizer="fast_run"), "linker=cvm, optimizer=fast_run"


class PytensorAdapter:
    name = "pytensor"

    def version(self) -> str:
        """PyTensor's version and, once built, its linker (VMLinker: the C backend; JAXLinker; NumbaLinker)."""
        graph = getattr(self, "graph", None)
        return pytensor.__version__ + (f" ({type(graph.mode.linker).__name__})" if graph else "")

    def setup(self, threads: int, device: str, seed: int) -> None:
        threadpool_limits(limits=threads)  # process-wide until changed: not used as a context manager
        self.seed, self.device = seed, device
        if device != "cpu":  # PyTensor reaches a GPU through JAX only (imported here: a CPU trial needs no JAX)
            # lazy: jax
            from sensitivity.frameworks.backends.jax import gpu_setup
            self.gpu_device = gpu_setup("pytensor", device)

    def placement(self) -> dict:
        """The graph runs as JAX programs on JAX's default device (set by `_mode`): a tensor must land there."""
        # lazy: jax
        import jax  # JAX and its helpers imported here, as in setup: a CPU trial needs no JAX

        # lazy: jax
        from sensitivity.frameworks.backends.jax import gpu_placement
        return gpu_placement("pytensor", self.gpu_device, {"data": jax.device_put(np.zeros(1, FLOAT)).device})

    def peak_device_memory_mb(self):
        if self.device == "cpu":
            return None
        # lazy: jax
        from sensitivity.frameworks.backends.jax import gpu_peak_mb  # imports JAX: a CPU trial needs none
        return gpu_peak_mb(self.gpu_device)

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        rule = semantics.resolve(spec).rule  # never stock: there are no optimizer classes
        key = (model, tuple(input_shape), spec.optimizer, rule, self.device)
        pool = _GRAPHS.setdefault(key, [])
        free = [g for g in pool if g.owner() is None and not (g.static and g.has_dropout)]
        self.graph = free[0] if free else _Graph(model, tuple(input_shape), classes, spec.optimizer, rule,
                                                 _mode(self.device)[0])
        if not free:
            pool.append(self.graph)
        self.graph.owner = weakref.ref(self)
        if weights is None:  # the Theano tutorials' initialiser (PyTensor has none)
            weights = glorot_uniform(model.param_shapes(input_shape, classes), self.seed)
        self.graph.reset(weights, spec.momentum, spec.weight_decay, self.seed)

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """No scheduler: the rates are the loop's (Caffe's formula)."""
        return lr_schedule(spec, total_steps)

    def threads_in_effect(self):
        """NumPy's BLAS thread count as threadpoolctl reads it back (None where it finds no BLAS)."""
        counts = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
        return max(counts) if counts else None

    def numerics(self) -> dict:
        mode, name = _mode(getattr(self, "device", "cpu"))
        return {"dtype": pytensor.config.floatX, "loss_reduction": "mean", "mode": name,
                "linker": type(mode.linker).__name__}

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.graph.x_data.set_value(x_train.astype(FLOAT, copy=False))
        self.graph.y_data.set_value(y_train.astype(np.int64, copy=False))

    def compile(self, batch_size: int) -> None:
        step = self.graph.function("step", batch_size)
        predict = self.graph.function("predict", EVAL_BATCH)
        if self.graph.static:  # JAX compiles at the first call: make that call now, then undo the step
            saved = [(var, var.get_value()) for var in self.graph.state()]
            step(np.zeros(batch_size, np.int64), np.float32(0.0))
            predict(np.zeros((EVAL_BATCH,) + self.graph.input_shape, FLOAT))
            for var, value in saved:
                var.set_value(value)

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        step, total = self.graph.function("step", order.shape[1]), 0.0
        order, lrs = order.astype(np.int64, copy=False), lrs.astype(FLOAT)
        for i in range(len(order)):
            loss = float(step(order[i], lrs[i]))
            total += loss
            if not math.isfinite(loss):
                return EpochStats(float("nan"), i + 1, diverged=True)
        return EpochStats(total / max(len(order), 1), len(order))

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.graph.function("predict", len(x))(x.astype(FLOAT, copy=False)))

    def parameter_count(self) -> int:
        return sum(v.get_value(borrow=True).size for pair in self.graph.params for v in pair)

    def get_weights(self) -> list:
        return [(np.asarray(k.get_value()), np.asarray(b.get_value())) for k, b in self.graph.params]

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        fn = self.graph.function("input_gradient", len(x))
        return np.asarray(fn(x.astype(FLOAT, copy=False), y.astype(np.int64, copy=False)))


class _Graph:
    """Shared variables of one model and its functions, each compiled on first use."""

    def __init__(self, model: ModelSpec, input_shape: tuple, classes: int, optimizer: str, rule, mode):
        self.model, self.input_shape, self.classes, self.optimizer, self.rule, self.mode = (
            model, input_shape, classes, optimizer, rule, mode)
        self.owner = lambda: None
        shared = lambda shape, name: pytensor.shared(np.zeros(shape, FLOAT), name)  # noqa: E731
        self.params = [(shared(k, f"kernel{i}"), shared(b, f"bias{i}"))
                       for i, (k, b) in enumerate(model.param_shapes(input_shape, classes))]
        self.x_data = shared((1,) + input_shape, "x_data")
        self.y_data = pytensor.shared(np.zeros(1, np.int64), "y_data")
        self.momentum, self.decay = shared((), "momentum"), shared((), "weight_decay")
        self.srng = RandomStream(0)
        flat = [p for pair in self.params for p in pair]
        self.slots = {name: [shared(p.get_value().shape, f"{name}_{p.name}") for p in flat]
                      for name in slot_names(optimizer)}
        self.t = shared((), "adam_t")
        self.functions = {}
        self.static = type(mode.linker).__name__ == "JAXLinker"  # JAX: static shapes, compiled per size
        self.has_dropout = any(isinstance(layer, Dropout) for layer in model.layers)

    def state(self) -> list:
        return [p for pair in self.params for p in pair] + self._slots() + [self.t]

    def _slots(self) -> list:
        return [var for slot in self.slots.values() for var in slot]

    def reset(self, weights: list, momentum: float, weight_decay: float, seed: int) -> None:
        for (k, b), (k0, b0) in zip(self.params, weights):
            k.set_value(np.asarray(k0, FLOAT))
            b.set_value(np.asarray(b0, FLOAT))
        for slot in self._slots() + [self.t]:
            slot.set_value(np.zeros(np.shape(slot.get_value()), FLOAT))
        self.momentum.set_value(np.asarray(momentum, FLOAT))
        self.decay.set_value(np.asarray(weight_decay, FLOAT))
        self.srng.seed(seed)

    def forward(self, x, training: bool):
        params, shape = iter(self.params), self.input_shape
        h = x.dimshuffle(1, 0, 2, 3) if x.ndim == 4 else x  # CNHW inside the image layers
        for layer in self.model.layers:
            if isinstance(layer, Conv):
                h = _conv(h, *next(params), layer, shape)
            elif isinstance(layer, Pool):
                h = _pool(h, layer, shape)
            elif isinstance(layer, Dense):
                k, b = next(params)
                h = pt.dot(h, k) + b
            elif isinstance(layer, ReLU):
                h = pt.maximum(h, 0)
            elif isinstance(layer, Flatten):
                h = h.dimshuffle(1, 0, 2, 3) if h.ndim == 4 else h
                h = h.reshape((h.shape[0], -1))
            elif isinstance(layer, Dropout) and training:
                keep = self.srng.uniform(size=h.shape, dtype=FLOAT) >= layer.rate
                h = pt.where(keep, h / np.float32(1.0 - layer.rate), np.float32(0.0))
            shape = ModelSpec("one", (layer,)).shapes(shape)[0]
        return h

    def _loss(self, x, y, training: bool):
        logits = self.forward(x, training)
        shifted = logits - disconnected_grad(logits.max(axis=1, keepdims=True))
        log_probs = shifted - pt.log(pt.exp(shifted).sum(axis=1, keepdims=True))  # C ops, unlike LogSoftmax
        return -(log_probs * pt.eq(y[:, None], np.arange(self.classes)[None, :])).sum(axis=1)

    def function(self, name: str, size: int):
        """The compiled function `name`, for any batch size (per batch size under JAX)."""
        size = size if self.static else None
        if (name, size) not in self.functions:
            self.functions[name, size] = getattr(self, "_compile_" + name)(size)
        return self.functions[name, size]

    def _compile_predict(self, size):
        x = pt.tensor("x", dtype=FLOAT, shape=(size,) + self.input_shape)
        return pytensor.function([x], self.forward(x, training=False), mode=self.mode)

    def _compile_input_gradient(self, size):
        x = pt.tensor("x", dtype=FLOAT, shape=(size,) + self.input_shape)
        y = pt.tensor("y", dtype="int64", shape=(size,))
        return pytensor.function([x, y], pt.grad(self._loss(x, y, False).sum(), x), mode=self.mode)

    def _compile_step(self, size):
        """loss = step(indices, lr): one update under the Rule; the loss is that of the weights before it."""
        idx, lr = pt.tensor("indices", dtype="int64", shape=(size,)), pt.scalar("lr", dtype=FLOAT)
        batch = pt.specify_shape(self.x_data[idx], (size,) + self.input_shape)  # batch gathered in the graph
        loss = self._loss(batch, self.y_data[idx], training=True).mean()
        flat = [p for pair in self.params for p in pair]
        updates = graph_updates(self.rule, self.optimizer, flat, pt.grad(loss, flat), lr, self.momentum, self.decay,
                                self.slots, self.t, pt.sqrt)
        updates = [(var, pt.cast(value, var.dtype)) for var, value in updates]
        return pytensor.function([idx, lr], loss, updates=updates, mode=self.mode)


def _conv(h, kernel, bias, layer: Conv, chw: tuple):
    """Correlation of CNHW activations by im2col: (O, C*k*k) kernel times (C*k*k, N*oh*ow) patches."""
    c, height, width = chw
    k, s, p = layer.kernel, layer.stride, layer.pad
    if p:
        h = pt.set_subtensor(pt.zeros((c, h.shape[1], height + 2 * p, width + 2 * p), dtype=FLOAT)
                             [:, :, p:p + height, p:p + width], h)
    oh, ow = (height + 2 * p - k) // s + 1, (width + 2 * p - k) // s + 1
    patches = pt.stack([h[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s]
                        for i in range(k) for j in range(k)], axis=1)
    out = pt.dot(kernel.reshape((layer.out_channels, c * k * k)), patches.reshape((c * k * k, -1)))
    return out.reshape((layer.out_channels, -1, oh, ow)) + bias[:, None, None, None]


def _pool(h, layer: Pool, chw: tuple):
    """Max or average pooling of CNHW activations with Caffe's ceil rounding, as k*k strided slices of the
    input padded with -inf (max) or zeros (average, divided by each window's in-image count)."""
    c, height, width = chw
    k, s = layer.kernel, layer.stride
    oh, ow = (pooled_size(n, k, s, layer.ceil) for n in (height, width))
    pad_h, pad_w = ceil_padding(layer, height), ceil_padding(layer, width)
    if pad_h or pad_w:
        fill = -np.inf if layer.kind == "max" else 0.0
        padded = pt.full((c, h.shape[1], height + pad_h, width + pad_w), fill, dtype=FLOAT)
        h = pt.set_subtensor(padded[:, :, :height, :width], h)
    slices = [h[:, :, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s] for i in range(k) for j in range(k)]
    if layer.kind == "max":  # elementwise maxima of strided slices: far faster than a reshape and max
        return functools.reduce(pt.maximum, slices)
    return pt.add(*slices) / np.outer(window_counts(layer, height), window_counts(layer, width)).astype(FLOAT)

