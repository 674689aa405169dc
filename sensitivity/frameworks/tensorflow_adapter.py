"""TensorFlow adapter, on TensorFlow's own API: tf.Variables, a tf.data pipeline of each epoch's batches and a
tf.function training step, the way TensorFlow's guide writes a training loop from scratch. The pipeline
runs without tf.data's autotuning: the autotuner's thread, waiting in doubling sleeps, holds up the end of
an epoch, so epoch times snap to 10 ms x (2^k - 1) (0.63, 1.27, 2.55 s measured here).

Images are NHWC inside TensorFlow; kernels are converted from the neutral layout on load and back on
get_weights. TensorFlow has no ceil-mode pooling: a Caffe (ceil) pooling whose output and window starts
match 'SAME' padding uses it (SAME excludes the padding from averages, as Caffe does at the edge); others
pad explicitly: max pooling with -inf, average pooling with zeros, its sums then divided by the count of
real inputs in each window, as Caffe divides.
"""
from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from sensitivity.frameworks.base import EpochStats
from sensitivity.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, from_nhwc, neutral_kernel,
                                nhwc_kernel, pooled_size, to_nhwc)
from sensitivity.optim import ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO


class TensorflowAdapter:
    name = "tensorflow"

    def version(self) -> str:
        return tf.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:  # settable once per process: a warm worker keeps the first setting
            pass
        tf.random.set_seed(seed)
        self.rng = tf.random.Generator.from_seed(seed)
        self.device = "/CPU:0" if device == "cpu" else "/GPU:" + (device[4:] or "0")

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec) -> None:
        self.layers = []  # (kind, variables or parameters)
        self.variables = []
        with tf.device(self.device):
            initial = iter(weights) if weights is not None else None
            shape = tuple(input_shape)
            for layer, out in zip(model.layers, model.shapes(input_shape)):
                if isinstance(layer, (Conv, Dense)):
                    kernel, bias = next(initial) if initial else self._own_init(layer, shape)
                    k, b = tf.Variable(nhwc_kernel(kernel, self._flattened(len(self.layers)))), tf.Variable(bias)
                    self.variables += [k, b]
                    self.layers.append(("conv" if isinstance(layer, Conv) else "dense", (k, b, layer)))
                elif isinstance(layer, Pool):
                    padding = _pool_padding(layer, shape)
                    counts = _window_counts(layer, shape) if isinstance(padding, list) and layer.kind == "avg" \
                        else None
                    self.layers.append(("pool", (layer, padding, counts)))
                elif isinstance(layer, Flatten):
                    self.layers.append(("flatten", shape))
                elif isinstance(layer, ReLU):
                    self.layers.append(("relu", None))
                elif isinstance(layer, Dropout):
                    self.layers.append(("dropout", layer.rate))
                shape = out
            self.optimizer = CanonicalOptimizer(self.variables, spec.optimizer, spec.momentum, spec.weight_decay)
        self._step = tf.function(self._train_step)
        self.check_every = 1 if self.device.startswith("/CPU") else 25  # reading the loss syncs a GPU
        self._forward = tf.function(lambda x: self._apply(x, training=False))

    def _own_init(self, layer, shape):
        """TensorFlow's usual initialisers (Glorot uniform kernels, zero biases), in neutral layout."""
        init = tf.keras.initializers.GlorotUniform(seed=int(self.rng.uniform_full_int([]).numpy() % 2**31))
        if isinstance(layer, Conv):
            kernel = init((layer.kernel, layer.kernel, shape[0], layer.out_channels)).numpy().transpose(3, 2, 0, 1)
            return kernel, np.zeros(layer.out_channels, np.float32)
        return init((shape[0], layer.units)).numpy(), np.zeros(layer.units, np.float32)

    def _apply(self, x, training: bool):
        for kind, params in self.layers:
            if kind == "conv":
                k, b, layer = params
                # "VALID" where there is no padding: explicit zero padding takes a slower convolution kernel
                pad = [[0, 0], [layer.pad, layer.pad], [layer.pad, layer.pad], [0, 0]] if layer.pad else "VALID"
                x = tf.nn.conv2d(x, k, layer.stride, pad) + b
            elif kind == "dense":
                x = tf.matmul(x, params[0]) + params[1]
            elif kind == "pool":
                x = _pool(x, *params)
            elif kind == "flatten":
                x = tf.reshape(x, [tf.shape(x)[0], -1])
            elif kind == "relu":
                x = tf.nn.relu(x)
            elif kind == "dropout" and training:
                keep = self.rng.uniform(tf.shape(x)) >= params
                x = tf.where(keep, x / (1.0 - params), 0.0)
        return x

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        with tf.device(self.device):
            self.x = tf.constant(to_nhwc(x_train))
            self.y = tf.constant(y_train)

    def _train_step(self, xb, yb, lr):
        """One step on a batch. A non-finite loss stops the epoch at the check that reads it; its update is
        not skipped (a conditional around the update cost 9% of a LeNet epoch here), as in the other
        adapters: by then the weights are not finite anyway, and the model left is at chance."""
        with tf.GradientTape() as tape:
            logits = self._apply(xb, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        self.optimizer.apply(tape.gradient(loss, self.variables), lr)
        return loss

    def compile(self, batch_size: int) -> None:
        """Trace and instantiate the step with one real step, then restore every weight and optimizer slot
        (an empty batch would not do: oneDNN's convolution mis-shapes one)."""
        state = self.variables + self.optimizer.slots()
        saved = [v.numpy() for v in state]
        with tf.device(self.device):
            self._step(self.x[:batch_size], self.y[:batch_size], tf.constant(0.0))
        for variable, value in zip(state, saved):
            variable.assign(value)

    def _batches(self, order: np.ndarray, lrs: np.ndarray) -> tf.data.Dataset:
        """The epoch's batches: one gather of the resident training set, sliced by the pipeline."""
        with tf.device(self.device):
            index = tf.constant(order.reshape(-1), tf.int64)
            samples = tf.data.Dataset.from_tensor_slices((tf.gather(self.x, index), tf.gather(self.y, index)))
        rates = tf.data.Dataset.from_tensor_slices(lrs.astype(np.float32))
        options = tf.data.Options()
        options.autotune.enabled = False
        return tf.data.Dataset.zip((samples.batch(order.shape[1]), rates)).prefetch(2).with_options(options)

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        losses, total = [], 0.0
        with tf.device(self.device):
            for step, ((xb, yb), lr) in enumerate(self._batches(order, lrs), 1):
                losses.append(self._step(xb, yb, lr))
                if step % self.check_every == 0 or step == len(order):
                    values, losses = [float(v) for v in losses], []
                    for offset, value in enumerate(values):
                        if not math.isfinite(value):
                            return EpochStats(float("nan"), step - len(values) + offset + 1, diverged=True)
                    total += sum(values)
        return EpochStats(total / max(len(order), 1), len(order))

    def predict(self, x: np.ndarray) -> np.ndarray:
        with tf.device(self.device):
            return self._forward(tf.constant(to_nhwc(x))).numpy()

    def parameter_count(self) -> int:
        return sum(int(v.shape.num_elements()) for v in self.variables)

    def get_weights(self) -> list:
        out = []
        for i, (kind, params) in enumerate(self.layers):
            if kind in ("conv", "dense"):
                out.append((neutral_kernel(params[0].numpy(), self._flattened(i)), params[1].numpy()))
        return out

    def _flattened(self, index: int):
        """The (C, H, W) that a Flatten just before layer `index` flattens, or None."""
        if index == 0:
            return None
        kind, params = self.layers[index - 1]
        return params if kind == "flatten" and len(params) == 3 else None

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xt = tf.constant(to_nhwc(x))
        with tf.GradientTape() as tape:
            tape.watch(xt)
            logits = self._apply(xt, training=False)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant(y), logits))
        grad = tape.gradient(loss, xt).numpy()
        return from_nhwc(grad)


def _pool(x, layer: Pool, padding, counts):
    if counts is not None:  # zero padding, then the mean over the real inputs only
        summed = tf.nn.avg_pool2d(tf.pad(x, padding), layer.kernel, layer.stride, "VALID")
        return summed * float(layer.kernel ** 2) / counts
    if isinstance(padding, list):
        x = tf.pad(x, padding, constant_values=-np.inf)
        padding = "VALID"
    pool = tf.nn.max_pool2d if layer.kind == "max" else tf.nn.avg_pool2d
    return pool(x, layer.kernel, layer.stride, padding)


def _pool_padding(layer: Pool, chw: tuple):
    """'VALID', 'SAME', or an explicit [[0,0],[0,ph],[0,pw],[0,0]] that gives Caffe's ceil output."""
    _, h, w = chw
    if not layer.ceil:
        return "VALID"
    pads = []
    for size in (h, w):
        out = pooled_size(size, layer.kernel, layer.stride, ceil=True)
        same_out = math.ceil(size / layer.stride)
        same_before = max((same_out - 1) * layer.stride + layer.kernel - size, 0) // 2
        pads.append((out, same_out, same_before, max((out - 1) * layer.stride + layer.kernel - size, 0)))
    if all(out == same_out and before == 0 for out, same_out, before, _ in pads):
        return "SAME"
    return [[0, 0], [0, pads[0][3]], [0, pads[1][3]], [0, 0]]


def _window_counts(layer: Pool, chw: tuple) -> np.ndarray:
    """How many real inputs each ceil-mode window covers, shaped (1, oh, ow, 1): Caffe's divisor."""
    _, h, w = chw
    rows, cols = [[min(i * layer.stride + layer.kernel, size) - i * layer.stride
                   for i in range(pooled_size(size, layer.kernel, layer.stride, ceil=True))] for size in (h, w)]
    return np.outer(rows, cols).astype(np.float32)[None, :, :, None]


class CanonicalOptimizer:
    """The canonical update (sensitivity.optim) on tf.Variables, inside the traced epoch."""

    def __init__(self, variables: list, optimizer: str, momentum: float, weight_decay: float):
        self.vars, self.kind, self.mu, self.wd = variables, optimizer, momentum, weight_decay
        slot = lambda: [tf.Variable(tf.zeros_like(v)) for v in variables]  # noqa: E731
        self.v = slot() if optimizer in ("momentum", "nesterov", "adam") else None
        self.s = slot() if optimizer in ("adam", "rmsprop") else None
        self.t = tf.Variable(0.0)

    def slots(self) -> list:
        """Every optimizer variable (velocities, second moments, the step count)."""
        return (self.v or []) + (self.s or []) + [self.t]

    def apply(self, grads: list, lr) -> None:
        if self.kind == "adam":
            self.t.assign_add(1.0)
            correction1 = 1.0 - ADAM_BETA1 ** self.t
            correction2 = 1.0 - ADAM_BETA2 ** self.t
        for i, (w, g) in enumerate(zip(self.vars, grads)):
            if self.wd:
                g = g + self.wd * w
            if self.kind == "sgd":
                w.assign_sub(lr * g)
            elif self.kind == "momentum":
                w.assign_add(self.v[i].assign(self.mu * self.v[i] - lr * g))
            elif self.kind == "nesterov":
                v = self.v[i].assign(self.mu * self.v[i] - lr * g)
                w.assign_add(self.mu * v - lr * g)
            elif self.kind == "adam":
                m = self.v[i].assign(ADAM_BETA1 * self.v[i] + (1 - ADAM_BETA1) * g)
                s = self.s[i].assign(ADAM_BETA2 * self.s[i] + (1 - ADAM_BETA2) * g * g)
                w.assign_sub(lr * (m / correction1) / (tf.sqrt(s / correction2) + EPSILON))
            elif self.kind == "rmsprop":
                s = self.s[i].assign(RMSPROP_RHO * self.s[i] + (1 - RMSPROP_RHO) * g * g)
                w.assign_sub(lr * g / (tf.sqrt(s) + EPSILON))
