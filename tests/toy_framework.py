"""A toy framework added by docs/architecture.md's checklist ("Adding a framework"), for
tests/frameworks/test_declaration.py: numpy in float64 trains Flatten/Dense/ReLU models with the float64
reference's gradients (`core.reference.loss_and_grads`) and the hand-written update (`core.optim.rule_update`).

Its one declaration is DECLARATION, entered by `frameworks.register`. Run as a file, it is also a test worker
(`SENSITIVITY_TEST_WORKER=toy_framework`, see trial/runner.py `worker_command`): it registers the toy in the
worker process, then serves as the real worker does, so a trial of it runs for real through the runner.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from sensitivity.core import semantics
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.core.reference import forward, loss_and_grads
from sensitivity import frameworks
from sensitivity.frameworks import FrameworkInfo, base, gpu
from sensitivity.trial import worker

NAME = "toy"
NATIVE = semantics.Native(
    semantics.CANONICAL_RULE, semantics.TUTORIAL_GLOROT, {}, {}, "",
    {"update": "tests/toy_framework.py: no optimizer library, the hand-written update (the canonical formulas)",
     "init": "tests/toy_framework.py: uniform +-sqrt(6/(fan_in+fan_out)), biases zero",
     "schedule": "none: the rate is computed in Python for each step"})
GPU = gpu.Support(no_gpu="the toy framework is numpy: it runs on the CPU only",
                  determinism=("none needed: numpy on a CPU", "none"))
DECLARATION = FrameworkInfo(name=NAME, adapter="toy_framework:ToyAdapter", env="modern", distribution="numpy",
                            extra=NAME, module="toy_framework", native=NATIVE, gpu=GPU)


class ToyAdapter:
    """frameworks.base.Adapter in numpy (float64, CPU only)."""

    name = NAME

    def version(self) -> str:
        return f"toy (numpy {np.__version__})"

    def setup(self, threads: int, device: str, seed: int) -> None:
        if device != "cpu":
            raise gpu.no_gpu(NAME, GPU.no_gpu)
        self.seed = seed

    def build(self, model, input_shape, classes, weights, spec, total_steps) -> None:
        self.model, self.spec = model, spec
        if weights is None:  # its own initialiser: the declared native one, drawn by numpy from the seed
            weights = semantics.draw_init(NAME, model.param_shapes(input_shape, classes), self.seed)
        self.weights = [tuple(np.asarray(a, np.float64) for a in pair) for pair in weights]
        self.rule = semantics.resolve(spec).rule
        self.slots = [[{k: np.zeros_like(a) for k in slot_names(spec.optimizer)} for a in pair]
                      for pair in self.weights]
        self.t = 0

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        raise NotImplementedError("the toy framework has no scheduler")

    def threads_in_effect(self):
        return None

    def numerics(self) -> dict:
        return {"dtype": "float64", "loss_reduction": "mean"}

    def set_data(self, x_train, y_train) -> None:
        self.x, self.y = x_train, y_train

    def compile(self, batch_size: int) -> None:
        pass

    def placement(self) -> dict:
        raise gpu.no_gpu(NAME, GPU.no_gpu)  # never reached: `setup` refuses a GPU

    def peak_device_memory_mb(self):
        return None

    def train_epoch(self, order, lrs) -> base.EpochStats:
        spec, total = self.spec, 0.0
        for i, (batch, lr) in enumerate(zip(order, lrs)):
            loss, grads, _ = loss_and_grads(self.model, self.weights, self.x[batch], self.y[batch])
            if not np.isfinite(loss):
                return base.EpochStats(float("nan"), i + 1, diverged=True)
            total, self.t = total + loss, self.t + 1
            for j, (pair, grad_pair) in enumerate(zip(self.weights, grads)):
                updated = [rule_update(self.rule, spec.optimizer, w, g, self.slots[j][k], lr, spec.momentum,
                                       spec.weight_decay, t=self.t) for k, (w, g) in enumerate(zip(pair, grad_pair))]
                self.weights[j] = tuple(w for w, _ in updated)
                self.slots[j] = [slots for _, slots in updated]
        return base.EpochStats(total / max(len(order), 1), len(order))

    def predict(self, x) -> np.ndarray:
        return forward(self.model, self.weights, x)

    def parameter_count(self) -> int:
        return sum(a.size for pair in self.weights for a in pair)

    def get_weights(self) -> list:
        return [tuple(a.copy() for a in pair) for pair in self.weights]

    def input_gradient(self, x, y) -> np.ndarray:
        return loss_and_grads(self.model, self.weights, x, y)[2] * len(y)  # of the summed cross-entropy


def main() -> None:
    """The test worker: the toy registered, then the real worker's own serving loop."""
    if Path(sys.path[0]).resolve() != Path(__file__).resolve().parent:
        sys.path.insert(0, str(Path(__file__).resolve().parent))  # where the adapter's module is imported from
    frameworks.register(DECLARATION)
    worker._exit_with_parent()
    worker.serve(sys.stdin, worker._protocol_stream())


if __name__ == "__main__":
    main()
