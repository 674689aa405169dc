"""Theano 1.0.5 adapter: shared variables, one compiled training step and one compiled predict function.

Theano has no optimizer library: native is the deep-learning tutorials' hand-written update, which is the
canonical Rule, and their Glorot-uniform initialiser (`models.glorot_uniform`) when no weights are given;
every Rule (canonical, native or an ablation's mix) is `optim.graph_updates`, the hand-written
`optim.rule_update` on Theano's symbolic variables. Theano has no scheduler either: the rates are the
loop's (Caffe's formula), fed per step.

Theano uses the neutral layouts as they are (NCHW images, (out, in, kh, kw) kernels, (in, out) dense
kernels). The learning rate is an input of the step function and momentum and weight decay are shared
scalars, so one compiled function serves every configuration of a model; compiled graphs are cached per
(model, input shape, optimizer, Rule, device) for the life of the process and reused by the next build (a
warm worker compiles nothing). The training set lives in shared variables and each step passes only its
index vector; the batch is gathered inside the graph. Batch size is not part of the compiled graph.

Flags are read once, at import: this module adds `floatX=float32` and `blas.ldflags=` to THEANO_FLAGS
unless they are set. Threads: with an empty `blas.ldflags`, Theano's matrix products (CorrMM included)
call NumPy's OpenBLAS through the C-API, so `setup` sets that library's thread count at run time.
`openmp` is forced off then: with it, CorrMM's loop over the batch calls that NumPy-based gemm from
several OpenMP threads at once, and the first training step crashed here. GPU: `setup` calls `theano.gpuarray.use("cudaN")`
(needs pygpu; like starting the worker with THEANO_FLAGS=device=cudaN), untested here; a worker that has
used a GPU keeps placing new shared variables there, so it should serve one device.
"""
from __future__ import annotations

import importlib.util
import os
import weakref


def _default_flags() -> None:
    flags = dict(f.split("=", 1) for f in os.environ.get("THEANO_FLAGS", "").split(",") if "=" in f)
    flags = {"floatX": "float32", "blas.ldflags": "", **flags}
    if not flags["blas.ldflags"]:
        flags["openmp"] = "False"  # True crashes the first training step (CorrMM + NumPy's C-API gemm)
    os.environ["THEANO_FLAGS"] = ",".join(f"{k}={v}" for k, v in flags.items())


_default_flags()

import numpy as np  # noqa: E402
import theano  # noqa: E402
import theano.tensor as T  # noqa: E402
from theano.sandbox.rng_mrg import MRG_RandomStreams  # noqa: E402
from theano.tensor.signal.pool import pool_2d  # noqa: E402

from sensitivity.core import semantics  # noqa: E402
from sensitivity.core.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, glorot_uniform  # noqa: E402
from sensitivity.core.optim import graph_updates, lr_schedule, slot_names  # noqa: E402
from sensitivity.frameworks import gpu  # noqa: E402
from sensitivity.frameworks import threads as threads_of  # noqa: E402
from sensitivity.frameworks.base import EpochStats, LossReader  # noqa: E402

FLOAT = theano.config.floatX
_GRAPHS: dict = {}  # (model, input shape, optimizer, Rule, device) -> [_Graph]; each used by one adapter at a time


class TheanoAdapter:
    name = "theano"

    def version(self) -> str:
        return theano.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        threads_of.blas(threads)  # NumPy's OpenBLAS, which Theano calls without ldflags
        self.seed = seed
        self.device = "cpu" if device == "cpu" else "cuda" + (device[4:] or "0")
        if self.device != "cpu" and not theano.config.device.startswith("cuda"):

            if importlib.util.find_spec("pygpu") is None:
                gpu.require("theano", 0, gpu.index(device), "pygpu is not installed: " + gpu.NO_GPU_ROUTE["theano"])
            # lazy: theano
            from theano import gpuarray  # needs pygpu; new shared variables then live on the GPU
            if self.device not in gpuarray.init_dev.devmap:  # once per process: a warm worker keeps it
                gpuarray.use(self.device, force=True)

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        rule = semantics.resolve(spec).rule
        key = (model, tuple(input_shape), spec.optimizer, rule, self.device)
        pool = _GRAPHS.setdefault(key, [])
        free = [g for g in pool if g.owner() is None]
        self.graph = free[0] if free else _Graph(model, tuple(input_shape), classes, spec.optimizer, rule)
        if not free:
            pool.append(self.graph)
        self.graph.owner = weakref.ref(self)
        if weights is None:  # the tutorials' initialiser
            weights = glorot_uniform(model.param_shapes(input_shape, classes), self.seed)
        self.graph.reset(weights, spec.momentum, spec.weight_decay, self.seed)

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """No scheduler: the tutorials compute the rate in the loop, as Caffe's formula does here."""
        return lr_schedule(spec, total_steps)

    def threads_in_effect(self):
        """NumPy's OpenBLAS thread count, read back (Theano's openmp is off: see the module's docstring)."""
        return threads_of.blas()

    def numerics(self) -> dict:
        config = theano.config
        return {"dtype": config.floatX, "loss_reduction": "mean", "mode": config.mode, "device": config.device,
                "linker": config.linker, "optimizer": config.optimizer, "openmp": config.openmp,
                "blas.ldflags": config.blas.ldflags, "cxx": bool(config.cxx)}

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.graph.x_data.set_value(x_train.astype(FLOAT, copy=False))
        self.graph.y_data.set_value(y_train.astype(np.int32))

    def compile(self, batch_size: int) -> None:
        self.graph.function("step")
        self.graph.function("predict")

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        step, steps = self.graph.function("step"), len(order)
        order = order.astype(np.int64, copy=False)
        losses = LossReader(1, np.asarray)  # each call returns its loss: nothing to defer
        for i in range(steps):
            diverged = losses.add(float(step(order[i], lrs[i])), i, steps)
            if diverged:
                return diverged
        return losses.stats(steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.graph.function("predict")(x.astype(FLOAT, copy=False)))

    def parameter_count(self) -> int:
        return sum(v.get_value(borrow=True).size for pair in self.graph.params for v in pair)

    def get_weights(self) -> list:
        return [(k.get_value(), b.get_value()) for k, b in self.graph.params]

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        fn = self.graph.function("input_gradient")
        return np.asarray(fn(x.astype(FLOAT, copy=False), y.astype(np.int32)))


class _Graph:
    """Shared variables of one model and its functions, each compiled on first use."""

    def __init__(self, model: ModelSpec, input_shape: tuple, classes: int, optimizer: str, rule):
        self.model, self.input_shape, self.optimizer, self.rule = model, input_shape, optimizer, rule
        self.owner = lambda: None
        shared = lambda shape, name: theano.shared(np.zeros(shape, FLOAT), name)  # noqa: E731
        self.params = [(shared(k, f"kernel{i}"), shared(b, f"bias{i}"))
                       for i, (k, b) in enumerate(model.param_shapes(input_shape, classes))]
        self.x_data = shared((1,) + input_shape, "x_data")
        self.y_data = theano.shared(np.zeros(1, np.int32), "y_data")
        self.momentum, self.decay = shared((), "momentum"), shared((), "weight_decay")
        self.srng = MRG_RandomStreams(1)
        flat = [p for pair in self.params for p in pair]
        self.slots = {name: [shared(p.get_value().shape, f"{name}_{p.name}") for p in flat]
                      for name in slot_names(optimizer)}
        self.step = shared((), "adam_step")
        self.functions = {}

    def reset(self, weights: list, momentum: float, weight_decay: float, seed: int) -> None:
        for (k, b), (k0, b0) in zip(self.params, weights):
            k.set_value(np.asarray(k0, FLOAT))
            b.set_value(np.asarray(b0, FLOAT))
        for slot in [var for variables in self.slots.values() for var in variables] + [self.step]:
            slot.set_value(np.zeros_like(slot.get_value()))
        self.momentum.set_value(np.asarray(momentum, FLOAT))
        self.decay.set_value(np.asarray(weight_decay, FLOAT))
        self.srng.seed(seed + 1)  # MRG refuses the seed 0

    def forward(self, h, training: bool):
        params, shape = iter(self.params), self.input_shape
        for layer in self.model.layers:
            if isinstance(layer, Conv):
                k, b = next(params)
                h = T.nnet.conv2d(h, k, input_shape=(None,) + shape, filter_shape=k.get_value().shape,
                                  border_mode=(layer.pad, layer.pad), subsample=(layer.stride, layer.stride),
                                  filter_flip=False) + b.dimshuffle("x", 0, "x", "x")
            elif isinstance(layer, Pool):  # ignore_border=False: Caffe's ceil; edge windows average in-image
                h = pool_2d(h, ws=(layer.kernel,) * 2, stride=(layer.stride,) * 2,
                            ignore_border=not layer.ceil, mode="max" if layer.kind == "max" else "average_exc_pad")
            elif isinstance(layer, Dense):
                k, b = next(params)
                h = T.dot(h, k) + b
            elif isinstance(layer, ReLU):
                h = T.nnet.relu(h)
            elif isinstance(layer, Flatten):
                h = h.flatten(2)
            elif isinstance(layer, Dropout) and training:
                keep = self.srng.binomial(h.shape, p=1.0 - layer.rate, dtype=FLOAT)
                h = h * keep / np.asarray(1.0 - layer.rate, FLOAT)
            shape = _next_shape(layer, shape)
        return h

    def _input(self):
        return T.tensor4("x") if len(self.input_shape) == 3 else T.matrix("x")

    def function(self, name: str):
        if name not in self.functions:
            self.functions[name] = getattr(self, "_compile_" + name)()
        return self.functions[name]

    def _compile_predict(self):
        x = self._input()
        return theano.function([x], self.forward(x, training=False))

    def _compile_input_gradient(self):
        x, y = self._input(), T.ivector("y")
        loss = T.nnet.categorical_crossentropy(T.nnet.softmax(self.forward(x, training=False)), y).sum()
        return theano.function([x, y], T.grad(loss, x), allow_input_downcast=True)

    def _compile_step(self):
        """loss = step(indices, lr): one update under the graph's Rule (weight decay, the shared scalar, in
        the Rule's form); the loss is the data loss of the weights before it."""
        idx, lr = T.lvector("indices"), T.scalar("lr")
        logits = self.forward(self.x_data[idx], training=True)
        loss = T.nnet.categorical_crossentropy(T.nnet.softmax(logits), self.y_data[idx]).mean()
        flat = [p for pair in self.params for p in pair]
        updates = graph_updates(self.rule, self.optimizer, flat, T.grad(loss, flat), lr, self.momentum, self.decay,
                                self.slots, self.step, T.sqrt)
        return theano.function([idx, lr], loss, updates=[(var, T.cast(value, var.dtype)) for var, value in updates],
                               allow_input_downcast=True)


def _next_shape(layer, shape: tuple) -> tuple:
    return ModelSpec("one", (layer,)).shapes(shape)[0]
