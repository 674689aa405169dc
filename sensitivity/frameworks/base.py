"""The few members every framework adapter implements, and the epoch plan they all follow.

The shared trial loop (`sensitivity.trial.loop`) draws each epoch's batch order with numpy from the seed
and computes every step's learning rate (`sensitivity.core.optim.lr_schedule`); an adapter only turns those
into its framework's native, fastest form. Batches are full: the last partial batch of an epoch is
dropped in every framework, so all frameworks take the same steps on the same samples.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol

import numpy as np

from sensitivity.core.models import ModelSpec


@dataclass
class EpochStats:
    mean_loss: float  # mean cross-entropy over the steps taken (the L2 term not included)
    steps: int  # steps taken; fewer than planned when the loss stopped being finite
    diverged: bool = False


@dataclass
class LossReader:
    """An epoch's losses, read from the device in groups of `every` steps (each read syncs a GPU; on a
    CPU `every` is 1); the first non-finite loss among a group stops the epoch as diverged. `read` turns a
    list of the framework's loss tensors into numpy."""

    every: int
    read: Callable[[list], np.ndarray]
    total: float = 0.0
    pending: list = field(default_factory=list)

    def add(self, loss, i: int, steps: int) -> Optional[EpochStats]:
        """Record step i's loss; returns the diverged EpochStats when a non-finite loss is read."""
        self.pending.append(loss)
        if (i + 1) % self.every and i != steps - 1:
            return None
        values, self.pending = np.asarray(self.read(self.pending), np.float64).reshape(-1), []
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:  # the first non-finite loss among those not yet read: its step counts
            return EpochStats(float("nan"), i + 2 - len(values) + int(bad[0]), diverged=True)
        self.total += float(values.sum())
        return None

    def stats(self, steps: int) -> EpochStats:
        return EpochStats(self.total / max(steps, 1), steps)


class Adapter(Protocol):
    name: str

    def version(self) -> str:
        """The framework's version string."""

    def setup(self, threads: int, device: str, seed: int) -> None:
        """Thread counts, device and the framework's own random seed; called once before build."""

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights: Optional[list],
              spec, total_steps: int) -> None:
        """Build the model natively; load `weights` ([(kernel, bias)] in neutral layout) unless None
        (then the framework's own initialiser is used); create the optimizer `semantics.resolve(spec)`
        asks for: the framework's stock classes and scheduler (stepped per iteration over `total_steps`)
        when it is stock, else `optim.rule_update` under its Rule at the rates `train_epoch` is given."""

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """The per-step learning rates the framework's own scheduler gives for `spec` (Caffe's values,
        by construction; float32 schedules round them)."""

    def threads_in_effect(self) -> Optional[int]:
        """The thread count the framework runs with, read back after `setup` (a setter can be refused or
        take no effect), or None where the framework has no setting."""

    def numerics(self) -> dict:
        """The framework's numeric defaults as it reports them: dtype, loss reduction, and on a GPU TF32
        and cuDNN settings (recorded in the result's env)."""

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        """Place the training set where the framework trains fastest (in memory, on the device)."""

    def compile(self, batch_size: int) -> None:
        """Do any first-step compilation now, without changing the weights (a no-op for eager ones); on a GPU
        also the device's start-up (cuDNN handles, kernels), so none of it falls inside a timed epoch."""

    def placement(self) -> dict:
        """On a GPU (`setup` raised frameworks.gpu.PlacementError if the framework sees none): check that the
        model and the training data live on the GPU, and return what the framework reports of it (device
        name, CUDA and cuDNN versions)."""

    def peak_device_memory_mb(self) -> Optional[float]:
        """The trial's peak GPU memory from the framework's own allocator (None where it keeps none)."""

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        """One epoch: step i uses samples order[i] (shape steps x batch) and learning rate lrs[i] (a
        stock optimizer steps its own scheduler instead). Stops at the first non-finite loss and reports
        it as diverged."""

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Logits for x (NCHW or vectors) in evaluation mode, as numpy."""

    def parameter_count(self) -> int:
        """The number of trainable values as the framework itself counts them in the model it built."""

    def get_weights(self) -> list:
        """The current weights as [(kernel, bias)] in neutral layout."""

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Gradient of the summed cross-entropy with respect to the input, in the input's layout."""
