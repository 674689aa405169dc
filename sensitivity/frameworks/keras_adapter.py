"""Keras 3 adapter: a Sequential model trained by Keras' own `model.compile` / `model.fit`.

The backend (tensorflow, jax or torch) is fixed before import by KERAS_BACKEND, which the runner sets
from TrialSpec.backend (`sensitivity.frameworks.worker_variables`). Images are NHWC (channels_last).

Native: compile with keras.optimizers' SGD (rate inside the velocity; Nesterov w += mu*v - lr*g), Adam
(epsilon 1e-7 on the uncorrected root) or RMSprop (rho 0.9, epsilon 1e-7 inside the root) as a user writes
them, Keras 3's decoupled `weight_decay`, and the learning rate a `keras.optimizers.schedules` schedule of
the optimizer's iterations (`backends.keras_optimizers`, which the tensorflow adapter uses too). Kernels
start glorot_uniform, biases zero. Otherwise (canonical, or knobs of other frameworks) `RuleOptimizer`, a
Keras optimizer whose update_step is `optim.rule_update` under the trial's Rule (canonical: L2 added to
the gradient, Adam's epsilon on the corrected root, RMSprop's outside it), at the rates `train_epoch` is
given:
- The learning rate of every step comes from the epoch's `lrs` array, kept in optimizer variables (so the
  jax backend's stateless train step carries it) and indexed by iterations since the epoch began.
- Weight decay in the optimizer, not L2 regularizers: the loss fit reports stays the data loss.
An epoch is one `model.fit` over exactly the batches of `order`, one gather, shuffle=False; a callback
counts steps and stops fit after the first batch whose loss is not finite.
Threads: tensorflow tf.config.threading, torch torch.set_num_threads; jax's XLA CPU pool is sized when jax
initialises (all CPUs the process may use), before any adapter code runs: `threads` has no effect there
(see jax_adapter). Seeds: keras.utils.set_random_seed on tensorflow; every initializer and Dropout layer
also gets its own seed, so the jax and torch backends need only Python's, numpy's and torch's seeded.
What the backend's own adapter also needs (numeric and determinism flags, GPU set-up, placement report, peak
memory) comes from `backends.<backend>`.
"""
from __future__ import annotations

import math
import os
import random

import keras
import numpy as np
from keras import ops

from sensitivity.core import semantics
from sensitivity.core.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, ceil_padding, from_nhwc,
                                     neutral_kernel, nhwc_kernel, same_is_caffe, to_nhwc, window_counts)
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks import gpu
from sensitivity.frameworks import threads as threads_of
from sensitivity.frameworks.backends.keras_optimizers import keras_optimizer, keras_rates, keras_schedule
from sensitivity.frameworks.base import EpochStats

BACKEND = keras.backend.backend()
# The helpers of the backend's framework, which importing keras has loaded already: no other framework is imported.
if BACKEND == "tensorflow":
    from sensitivity.frameworks.backends import tensorflow as backend_helpers
elif BACKEND == "jax":
    from sensitivity.frameworks.backends import jax as backend_helpers
elif BACKEND == "torch":
    from sensitivity.frameworks.backends import torch as backend_helpers
else:
    raise RuntimeError(f"keras runs on its {BACKEND} backend here; this adapter runs on tensorflow, jax or torch "
                       f"(KERAS_BACKEND, set by the runner from TrialSpec.backend)")


def _backend_version() -> str:
    return __import__(BACKEND).__version__  # the backends' module names: tensorflow, jax, torch


class KerasAdapter:
    name = "keras"
    backend = BACKEND  # recorded in the result's spec and env

    def version(self) -> str:
        return f"{keras.__version__} ({BACKEND} backend {_backend_version()})"

    def setup(self, threads: int, device: str, seed: int) -> None:
        if BACKEND == "tensorflow":
            backend_helpers.set_threads(threads)
            keras.utils.set_random_seed(seed)
        else:  # keras.utils.set_random_seed would import TensorFlow to seed it; every random layer
            random.seed(seed)  # and initializer here has its own seed, so only these generators remain
            np.random.seed(seed)
            if BACKEND == "torch":
                # lazy: torch
                import torch
                torch.set_num_threads(threads)
                torch.manual_seed(seed)
            if BACKEND == "jax":
                backend_helpers.use_compilation_cache()
        self.seed = seed
        if gpu.deterministic():
            backend_helpers.deterministic_flags()
        self.device = "cpu" if device == "cpu" else "gpu:" + (device[4:] or "0")
        self.gpu_device = backend_helpers.gpu_setup("keras", device) if device != "cpu" else None

    def placement(self) -> dict:
        with keras.device(self.device):
            tensor = ops.convert_to_tensor(self.x[:1])
        where = {"model": self.model.trainable_variables[0].value.device, "data": tensor.device}
        return backend_helpers.gpu_placement("keras", self.gpu_device, where)

    def peak_device_memory_mb(self):
        return None if self.gpu_device is None else backend_helpers.gpu_peak_mb(self.gpu_device)

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        requested = spec.backend or os.environ.get("KERAS_BACKEND") or "tensorflow"
        if requested != BACKEND:
            raise RuntimeError(f"keras runs on the {BACKEND} backend here, the trial asks for {requested}: "
                               f"KERAS_BACKEND must be set before keras is imported (the runner does)")
        given = iter(weights) if weights is not None else None
        shape, flat_from = tuple(input_shape), None
        layers = [keras.Input(shape[1:] + shape[:1] if len(shape) == 3 else shape)]  # (H, W, C)
        self.weighted, self.flat_before = [], []  # Conv2D/Dense layers; the (C,H,W) a Dense reads, if any
        for i, (layer, out) in enumerate(zip(model.layers, model.shapes(input_shape))):
            if isinstance(layer, (Conv, Dense)):
                chw = flat_from if isinstance(layer, Dense) else None
                init = self._initializers(i, next(given) if given else None, chw)
                if isinstance(layer, Conv):
                    if layer.pad:
                        layers.append(keras.layers.ZeroPadding2D(layer.pad))
                    layers.append(keras.layers.Conv2D(layer.out_channels, layer.kernel, layer.stride, **init))
                else:
                    layers.append(keras.layers.Dense(layer.units, **init))
                self.weighted.append(layers[-1])
                self.flat_before.append(chw)
                flat_from = None
            elif isinstance(layer, Pool):
                layers.append(_pool_layer(layer, shape))
            elif isinstance(layer, Flatten):
                layers.append(keras.layers.Flatten())
                flat_from = shape if len(shape) == 3 else None
            elif isinstance(layer, ReLU):
                layers.append(keras.layers.ReLU())
            elif isinstance(layer, Dropout):
                layers.append(keras.layers.Dropout(layer.rate, seed=self.seed + i))
            shape = out
        resolved = semantics.resolve(spec)
        with keras.device(self.device):
            self.model = keras.Sequential(layers)
            self.optimizer = keras_optimizer(spec, keras_schedule(spec, total_steps)) if resolved.stock \
                else RuleOptimizer(resolved.rule, spec)
            self.loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            self.model.compile(optimizer=self.optimizer, loss=self.loss)
        self.counter = _StepCounter()
        self.counter.check_every = 1 if self.device == "cpu" else 25  # as LossReader's groups

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        return keras_rates(spec, total_steps)

    def threads_in_effect(self):
        """The backend's thread count, read back; None on jax, which has no setting (see jax_adapter)."""
        if BACKEND == "tensorflow":
            return threads_of.tensorflow()
        if BACKEND == "torch":
            # lazy: torch
            import torch
            return torch.get_num_threads()
        return None

    def numerics(self) -> dict:
        """Keras' float type and loss reduction, and the backend's own precision and determinism flags."""
        return {**backend_helpers.numerics(), "dtype": keras.backend.floatx(), "loss_reduction": "mean",
                "keras_loss_reduction": self.loss.reduction if hasattr(self, "loss") else "sum_over_batch_size",
                "keras_dtype_policy": keras.config.dtype_policy().name, "keras_backend": BACKEND}

    def _initializers(self, i: int, pair, chw) -> dict:
        """The neutral (kernel, bias) as initializers in Keras' layout (no random op is run: on the jax
        backend each one would compile alone), or Keras' defaults (Glorot uniform kernel, zero
        bias) seeded per layer."""
        if pair is None:
            return {"kernel_initializer": keras.initializers.GlorotUniform(seed=self.seed + i)}
        kernel, bias = pair
        return {"kernel_initializer": _Given(nhwc_kernel(kernel, chw)), "bias_initializer": _Given(bias)}

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x, self.y = to_nhwc(x_train), y_train.astype(np.int32)  # fit feeds from memory

    def _fit(self, order: np.ndarray, lrs: np.ndarray):
        if isinstance(self.optimizer, RuleOptimizer):  # a stock optimizer reads its own schedule
            self.optimizer.start_epoch(lrs)
        idx = order.reshape(-1)
        with keras.device(self.device):
            return self.model.fit(self.x[idx], self.y[idx], batch_size=order.shape[1], epochs=1,
                                  shuffle=False, verbose=0, callbacks=[self.counter])

    def compile(self, batch_size: int) -> None:
        """Build the optimizer and compile fit's train step with one step, then restore every variable."""
        with keras.device(self.device):
            if isinstance(self.optimizer, RuleOptimizer):
                self.optimizer.capacity = max(1, len(self.y) // batch_size)
            self.optimizer.build(self.model.trainable_variables)
        state = self.model.variables + self.optimizer.variables
        saved = [ops.convert_to_numpy(v.value) for v in state]
        self._fit(np.arange(batch_size)[None] % len(self.y), np.zeros(1))
        for variable, value in zip(state, saved):
            variable.assign(value)

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        if not self.optimizer.built:
            self.compile(order.shape[1])
        history = self._fit(order, lrs)
        steps, loss = self.counter.steps, history.history["loss"][-1]
        if not math.isfinite(loss):
            return EpochStats(float("nan"), steps, diverged=True)
        return EpochStats(float(loss), steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        with keras.device(self.device):
            return np.asarray(self.model.predict_on_batch(to_nhwc(x)))

    def parameter_count(self) -> int:
        return self.model.count_params()

    def get_weights(self) -> list:
        out = []
        for layer, chw in zip(self.weighted, self.flat_before):
            kernel, bias = layer.get_weights()
            out.append((neutral_kernel(kernel, chw), bias))
        return out

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with keras.device(self.device):
            grad = np.asarray(_input_gradient(self.model, to_nhwc(x).astype(np.float32), y.astype(np.int32)))
        return from_nhwc(grad)


def _summed_loss(model, x, y):
    logits = model(x, training=False)
    return ops.sum(keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True))


def _input_gradient(model, x: np.ndarray, y: np.ndarray):
    """d(summed cross-entropy)/dx with the backend's own autodiff (Keras 3 has no common one)."""
    if BACKEND == "tensorflow":
        # lazy: tensorflow
        import tensorflow as tf
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            loss = _summed_loss(model, xt, tf.constant(y))
        return tape.gradient(loss, xt).numpy()
    if BACKEND == "jax":
        # lazy: jax
        import jax
        return jax.grad(lambda xv: _summed_loss(model, xv, y))(x)
    # lazy: torch
    import torch
    xt = ops.convert_to_tensor(x).requires_grad_(True)
    (grad,) = torch.autograd.grad(_summed_loss(model, xt, ops.convert_to_tensor(y)), xt)
    return grad.detach().cpu().numpy()


class _Given(keras.initializers.Initializer):
    """An initializer that returns the given array."""

    def __init__(self, value: np.ndarray):
        self.value = np.ascontiguousarray(value)

    def __call__(self, shape, dtype=None):
        if tuple(shape) != self.value.shape:
            raise ValueError(f"weights of shape {self.value.shape} given for a variable of shape {tuple(shape)}")
        return ops.convert_to_tensor(self.value, dtype)


class _StepCounter(keras.callbacks.Callback):
    """Counts the steps fit takes and stops it after the first non-finite loss (fit's running mean of
    the loss stays non-finite from that batch on). Reading the loss waits for the device: on a GPU it is
    read every `check_every` steps (a divergence then stops fit up to that many steps late)."""

    check_every = 1

    def on_train_begin(self, logs=None):
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.steps % self.check_every == 0 and not math.isfinite(float(logs["loss"])):
            self.model.stop_training = True


class CeilPool2D(keras.layers.Layer):
    """Caffe's ceil pooling where Keras' 'same' is not exact: pad bottom/right (-inf for max), pool
    'valid', and for averages rescale each window by its in-image count, as Caffe does at the edge."""

    def __init__(self, kind: str, kernel: int, stride: int, pads: tuple, scale: np.ndarray, **kwargs):
        super().__init__(**kwargs)
        self.kind, self.kernel, self.stride, self.pads = kind, kernel, stride, pads
        self.scale = scale  # (out_h, out_w, 1): window size / in-image elements

    def call(self, x):
        fill = -np.inf if self.kind == "max" else 0.0
        x = ops.pad(x, [[0, 0], [0, self.pads[0]], [0, self.pads[1]], [0, 0]], constant_values=fill)
        if self.kind == "max":
            return ops.max_pool(x, self.kernel, self.stride, "valid")
        return ops.average_pool(x, self.kernel, self.stride, "valid") * ops.convert_to_tensor(self.scale)

    def compute_output_shape(self, input_shape):
        n, h, w, c = input_shape
        return (n, (h + self.pads[0] - self.kernel) // self.stride + 1,
                (w + self.pads[1] - self.kernel) // self.stride + 1, c)


def _pool_layer(layer: Pool, chw: tuple):
    """Keras pooling with Caffe's rounding: 'valid' when no padding is needed; 'same' when its output
    and window starts agree (torch's 'same' averages replicate-pad an uneven edge, so not for those);
    otherwise an explicitly padded CeilPool2D."""
    pads = tuple(ceil_padding(layer, n) for n in chw[1:])
    keras_pool = keras.layers.MaxPooling2D if layer.kind == "max" else keras.layers.AveragePooling2D
    if not any(pads):
        return keras_pool(layer.kernel, layer.stride, "valid")
    if same_is_caffe(layer, chw) and (layer.kind == "max" or BACKEND != "torch"):
        return keras_pool(layer.kernel, layer.stride, "same")
    rows, cols = (window_counts(layer, n) for n in chw[1:])
    scale = (layer.kernel ** 2 / np.outer(rows, cols))[:, :, None].astype(np.float32)
    return CeilPool2D(layer.kind, layer.kernel, layer.stride, pads, scale)


class RuleOptimizer(keras.optimizers.Optimizer):
    """The hand-written update (optim.rule_update) of a semantics.Rule as a Keras optimizer, in keras ops.

    The rate comes from `EpochRates`: call `start_epoch(lrs)` before each fit; `capacity` (the most
    steps an epoch may have) must be set before `build`."""

    def __init__(self, rule, spec):
        schedule = EpochRates()
        super().__init__(learning_rate=schedule, name="rule_" + spec.optimizer)
        schedule.optimizer = self
        self.rule, self.kind, self.mu, self.wd, self.capacity = rule, spec.optimizer, spec.momentum, \
            spec.weight_decay, 1

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.rates = self.add_variable((self.capacity,), name="epoch_rates")
        self.first_step = self.add_variable((), dtype=self.iterations.dtype, name="epoch_first_step")
        self.slots = [{name: self.add_variable_from_reference(v, name) for name in slot_names(self.kind)}
                      for v in variables]

    def start_epoch(self, lrs: np.ndarray) -> None:
        if len(lrs) > self.capacity:
            raise ValueError(f"an epoch of {len(lrs)} steps exceeds the {self.capacity} compiled for")
        self.rates.assign(np.pad(lrs.astype(np.float32), (0, self.capacity - len(lrs))))
        self.first_step.assign(ops.convert_to_numpy(self.iterations))  # a copy: jax donates both

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        slots = self.slots[self._get_variable_index(variable)]
        t = ops.cast(self.iterations + 1, variable.dtype) if self.kind == "adam" else 1
        new, state = rule_update(self.rule, self.kind, variable, gradient, slots, lr, self.mu, self.wd, t,
                                 ops.sqrt)
        for name, value in state.items():
            self.assign(slots[name], value)
        self.assign(variable, new)


class EpochRates(keras.optimizers.schedules.LearningRateSchedule):
    """lr of optimizer step `step`: rates[step - first_step], both optimizer variables."""

    optimizer = None  # the RuleOptimizer that owns the variables

    def __call__(self, step):
        opt = self.optimizer
        index = ops.minimum(ops.cast(step - opt.first_step, "int32"), opt.capacity - 1)  # in range if asked
        return ops.take(opt.rates, index)                                                # after the epoch
