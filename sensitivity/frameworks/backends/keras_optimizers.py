"""Keras' optimizers and learning-rate schedules as a user writes them: the native optimizers of the keras
adapter and of the tensorflow adapter (whose optimizers are tf.keras's), on any Keras backend."""
from __future__ import annotations

import keras
import numpy as np
from keras import ops


def keras_optimizer(spec, learning_rate):
    """keras.optimizers' class for the optimizer as a user writes it: its own epsilon (1e-7) and rho (0.9),
    Keras 3's decoupled weight_decay (None when 0), at `learning_rate` (a float or a schedule)."""
    wd = spec.weight_decay or None
    if spec.optimizer == "adam":
        return keras.optimizers.Adam(learning_rate=learning_rate, weight_decay=wd)
    if spec.optimizer == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate=learning_rate, weight_decay=wd)
    momentum = 0.0 if spec.optimizer == "sgd" else spec.momentum
    return keras.optimizers.SGD(learning_rate=learning_rate, momentum=momentum,
                                nesterov=spec.optimizer == "nesterov", weight_decay=wd)


def keras_schedule(spec, total_steps: int):
    """The keras.optimizers.schedules schedule giving Caffe's policy at the optimizer's iterations (the
    float itself for fixed)."""
    schedules, lr, gamma = keras.optimizers.schedules, spec.lr, spec.gamma
    if spec.lr_policy == "step":
        return schedules.ExponentialDecay(lr, decay_steps=spec.stepsize, decay_rate=gamma, staircase=True)
    if spec.lr_policy == "multistep":  # Keras moves on when step > boundary, Caffe when step >= stepvalue
        return schedules.PiecewiseConstantDecay([v - 1 for v in spec.stepvalues],
                                                [lr * gamma ** k for k in range(len(spec.stepvalues) + 1)])
    if spec.lr_policy == "exp":
        return schedules.ExponentialDecay(lr, decay_steps=1, decay_rate=gamma)
    if spec.lr_policy == "cosine":
        return schedules.CosineDecay(lr, decay_steps=max(total_steps, 1))
    if spec.lr_policy == "inv":  # Keras has no power inv: the general mechanism
        return InvDecay(lr, gamma, spec.power)
    return float(lr)


def keras_rates(spec, total_steps: int) -> np.ndarray:
    """`keras_schedule` evaluated at steps 0..total_steps-1: at once where the schedule is elementwise; step by
    step, as the optimizer reads it, for PiecewiseConstantDecay on torch (it sums its pieces in place into a
    scalar, which a vector of steps cannot broadcast into)."""
    schedule = keras_schedule(spec, total_steps)
    if not callable(schedule):
        return np.full(total_steps, schedule, np.float32)
    if keras.backend.backend() == "torch" and isinstance(schedule, keras.optimizers.schedules.PiecewiseConstantDecay):
        rates = [schedule(ops.convert_to_tensor(step, "int64")) for step in range(total_steps)]
        return np.asarray([float(ops.convert_to_numpy(rate)) for rate in rates], np.float32)
    return np.asarray(ops.convert_to_numpy(schedule(ops.arange(total_steps, dtype="int32"))), np.float32)


class InvDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Caffe's inv policy, lr * (1 + gamma*step)^-power, as a Keras schedule."""

    def __init__(self, initial_learning_rate: float, gamma: float, power: float, name: str = "InvDecay"):
        super().__init__()
        self.initial_learning_rate, self.gamma, self.power, self.name = initial_learning_rate, gamma, power, name

    def __call__(self, step):
        lr = ops.convert_to_tensor(self.initial_learning_rate)
        step = ops.cast(step, lr.dtype)
        return lr * ops.power(1.0 + self.gamma * step, -self.power)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "gamma": self.gamma, "power": self.power,
                "name": self.name}
