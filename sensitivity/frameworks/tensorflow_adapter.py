"""TensorFlow adapter, on TensorFlow's own API: tf.Variables, a tf.data pipeline of each epoch's batches and a
tf.function training step, the way TensorFlow's guide writes a training loop from scratch. The pipeline
runs without tf.data's autotuning: the autotuner's thread, waiting in doubling sleeps, holds up the end of
an epoch, so epoch times snap to 10 ms x (2^k - 1) (docs/performance.md).

Native: TensorFlow's optimizers are tf.keras's, applied to the tf.Variables inside the traced step
(`opt.apply_gradients`): SGD, Adam, RMSprop with Keras' epsilons, rho and decoupled weight_decay, at a
keras.optimizers.schedules schedule of the optimizer's iterations (the constructors the keras adapter uses
too: `backends.keras_optimizers`); kernels start glorot_uniform, biases zero. This needs
Keras on its tensorflow backend (KERAS_BACKEND unset or tensorflow). Otherwise (canonical, or knobs of
other frameworks) `RuleOptimizer` runs `optim.rule_update` under the trial's Rule in tf ops, inside the
traced step, at the rates `train_epoch` is given.

Images are NHWC inside TensorFlow; kernels are converted from the neutral layout on load and back on
get_weights. TensorFlow has no ceil-mode pooling: a Caffe (ceil) pooling whose output and window starts
match 'SAME' padding uses it (SAME excludes the padding from averages, as Caffe does at the edge); others
pad explicitly: max pooling with -inf, average pooling with zeros, its sums then divided by the count of
real inputs in each window, as Caffe divides.
"""
from __future__ import annotations

import keras  # loaded by `import tensorflow` already (TensorFlow imports Keras' optimizers eagerly)
import numpy as np
import tensorflow as tf

from sensitivity.core import semantics
from sensitivity.core.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, ceil_padding, from_nhwc,
                                     neutral_kernel, nhwc_kernel, same_is_caffe, to_nhwc, window_counts)
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks import gpu
from sensitivity.frameworks import threads as threads_of
from sensitivity.frameworks.backends.keras_optimizers import keras_optimizer, keras_rates, keras_schedule
from sensitivity.frameworks.backends.tensorflow import (deterministic_flags, gpu_peak_mb, gpu_placement, gpu_setup,
                                                        set_threads)
from sensitivity.frameworks.backends.tensorflow import numerics as tf_numerics
from sensitivity.frameworks.base import EpochStats, LossReader


class TensorflowAdapter:
    name = "tensorflow"

    def version(self) -> str:
        return tf.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        set_threads(threads)
        tf.random.set_seed(seed)
        if gpu.deterministic():
            deterministic_flags()
        self.rng = tf.random.Generator.from_seed(seed)
        self.device = "/CPU:0" if device == "cpu" else gpu_setup("tensorflow", device)

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
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
                    counts = _divisors(layer, shape) if isinstance(padding, list) and layer.kind == "avg" else None
                    self.layers.append(("pool", (layer, padding, counts)))
                elif isinstance(layer, Flatten):
                    self.layers.append(("flatten", shape))
                elif isinstance(layer, ReLU):
                    self.layers.append(("relu", None))
                elif isinstance(layer, Dropout):
                    self.layers.append(("dropout", layer.rate))
                shape = out
            resolved = semantics.resolve(spec)
            if resolved.stock:
                self.optimizer = StockOptimizer(self.variables, spec, total_steps)
            else:
                self.optimizer = RuleOptimizer(self.variables, resolved.rule, spec)
        self._step = tf.function(self._train_step)
        self.check_every = 1 if self.device.startswith("/CPU") else 25  # reading the loss syncs a GPU
        # one graph for any batch: the test and validation sets (and an attack's batches) differ in size, and a
        # graph traced per size cost a trace per set and trial
        batch = tf.TensorSpec((None,) + to_nhwc(np.empty((0, *input_shape), np.float32)).shape[1:], tf.float32)
        self._forward = tf.function(lambda x: self._apply(x, training=False), input_signature=[batch])
        self._gradient = tf.function(self._input_gradient)  # an attack calls it 40 times a batch: one graph

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        return keras_rates(spec, total_steps)

    def threads_in_effect(self):
        """TensorFlow's intra-op count, read back: a warm worker keeps its first trial's."""
        return threads_of.tensorflow()

    def numerics(self) -> dict:
        dtype = self.variables[0].dtype.name if getattr(self, "variables", None) else "float32"
        return {"dtype": dtype, "loss_reduction": "mean", **tf_numerics()}

    def _own_init(self, layer, shape):
        """TensorFlow's usual initialisers (Glorot uniform kernels, zero biases), in neutral layout."""
        init = keras.initializers.GlorotUniform(seed=int(self.rng.uniform_full_int([]).numpy() % 2**31))
        draw = lambda dims: keras.ops.convert_to_numpy(init(dims, dtype="float32"))  # noqa: E731 (any backend)
        if isinstance(layer, Conv):
            kernel = draw((layer.kernel, layer.kernel, shape[0], layer.out_channels)).transpose(3, 2, 0, 1)
            return kernel, np.zeros(layer.out_channels, np.float32)
        return draw((shape[0], layer.units)), np.zeros(layer.units, np.float32)

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
        not skipped (a conditional around the update costs a share of every epoch), as in the other
        adapters: by then the weights are not finite anyway, and the model left is at chance."""
        with tf.GradientTape() as tape:
            logits = self._apply(xb, training=True)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        self.optimizer.apply(tape.gradient(loss, self.variables), lr)
        return loss

    def compile(self, batch_size: int) -> None:
        """Trace and instantiate the step with one real step, then restore every weight and optimizer slot
        (an empty batch would not do: oneDNN's convolution mis-shapes one)."""
        state = self.variables + self.optimizer.variables()
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
        steps = len(order)
        losses = LossReader(self.check_every, lambda pending: tf.stack(pending).numpy())
        with tf.device(self.device):
            for i, ((xb, yb), lr) in enumerate(self._batches(order, lrs)):
                diverged = losses.add(self._step(xb, yb, lr), i, steps)
                if diverged:
                    return diverged
        return losses.stats(steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        with tf.device(self.device):
            return self._forward(tf.constant(to_nhwc(x))).numpy()

    def placement(self) -> dict:
        return gpu_placement("tensorflow", self.device, {"model": self.variables[0].device, "data": self.x.device})

    def peak_device_memory_mb(self):
        return gpu_peak_mb(self.device)

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
        return from_nhwc(self._gradient(tf.constant(to_nhwc(x)), tf.constant(y)).numpy())

    def _input_gradient(self, xt, y):
        with tf.GradientTape() as tape:
            tape.watch(xt)
            logits = self._apply(xt, training=False)
            loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        return tape.gradient(loss, xt)


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
    pads = [ceil_padding(layer, n) for n in chw[1:]]
    if not any(pads):
        return "VALID"
    if same_is_caffe(layer, chw):
        return "SAME"
    return [[0, 0], [0, pads[0]], [0, pads[1]], [0, 0]]


def _divisors(layer: Pool, chw: tuple) -> np.ndarray:
    """How many real inputs each ceil-mode window covers, shaped (1, oh, ow, 1): Caffe's divisor."""
    rows, cols = (window_counts(layer, n) for n in chw[1:])
    return np.outer(rows, cols).astype(np.float32)[None, :, :, None]


class StockOptimizer:
    """tf.keras's optimizer class and schedule for the trial (`keras_optimizer`, `keras_schedule`), applied to
    the tf.Variables inside the traced step; it steps its schedule itself, so `lr` is not read."""

    def __init__(self, variables: list, spec, total_steps: int):
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(f"tensorflow: its native optimizers are tf.keras's, and Keras runs on the "
                               f"{keras.backend.backend()} backend in this process: unset KERAS_BACKEND (or set "
                               f"it to tensorflow) before keras is imported, or use semantics canonical")
        self.vars = variables
        self.optimizer = keras_optimizer(spec, keras_schedule(spec, total_steps))
        self.optimizer.build(variables)

    def variables(self) -> list:
        return list(self.optimizer.variables)

    def apply(self, grads: list, lr) -> None:
        self.optimizer.apply_gradients(zip(grads, self.vars))


class RuleOptimizer:
    """The hand-written update (optim.rule_update) of a semantics.Rule on tf.Variables, in tf ops inside the
    traced step, at the rate `lr` it is given."""

    def __init__(self, variables: list, rule, spec):
        self.vars, self.rule, self.spec = variables, rule, spec
        self.slots = [{name: tf.Variable(tf.zeros_like(v)) for name in slot_names(spec.optimizer)}
                      for v in variables]
        self.t = tf.Variable(0.0)

    def variables(self) -> list:
        """Every optimizer variable (velocities, second moments, the step count)."""
        return [slot for slots in self.slots for slot in slots.values()] + [self.t]

    def apply(self, grads: list, lr) -> None:
        spec = self.spec
        t = self.t.assign_add(1.0) if spec.optimizer == "adam" else 1
        for w, g, slots in zip(self.vars, grads, self.slots):
            new, state = rule_update(self.rule, spec.optimizer, w, g, slots, lr, spec.momentum, spec.weight_decay,
                                     t, tf.sqrt)
            for name, value in state.items():
                slots[name].assign(value)
            w.assign(new)
