"""What a forecast is made of: a plan's trials, or a sampled space's distribution, as `estimate.Run`s, and the
trial slots a machine or cluster gives."""
from __future__ import annotations

import functools
import math
import os

from sensitivity import datasets
from sensitivity.core.models import get_model
from sensitivity.core.spec import TrialSpec
from sensitivity.forecast.estimate import SAMPLES, Run, draw_configurations
from sensitivity.forecast.probe import Cell
from sensitivity.frameworks import gpu
from sensitivity.ray_cluster import joined

ABSENT = "not run: files absent"


@functools.lru_cache(maxsize=None)
def _sizes(dataset: str) -> tuple:
    return datasets.sizes(dataset)


def run_of(fields: dict, val_fraction: float, device: str, threads: int, status: str = "run", label: str = "",
           count: float = 1.0) -> Run:
    """The Run of one trial's TrialSpec fields."""
    dataset = fields["dataset"]
    info = datasets.get_info(dataset)
    train, test = _sizes(dataset)
    kept = int(train * (1 - val_fraction))
    batch = int(fields.get("batch_size", TrialSpec.model_fields["batch_size"].default))
    per_epoch = max(1, kept // batch)
    steps = fields.get("iterations") or per_epoch * int(fields.get("epochs", TrialSpec.model_fields["epochs"].default))
    cell = Cell(framework=fields["framework"], model=fields.get("model") or info.default_model,
                input_shape=tuple(info.input_shape), classes=info.classes, batch_size=batch,
                device="cpu" if device == "cpu" else "gpu", threads=int(fields.get("threads") or threads),
                semantics=fields.get("semantics", "native"), optimizer=fields.get("optimizer", "momentum"),
                backend=fields.get("backend") or "")
    return Run(cell, dataset, int(steps), math.ceil(steps / per_epoch), (train - kept) + test, count, status, label)


STEP_S, FLOPS = 1e-3, 5e10  # a step's fixed cost and one core's FLOP rate: fitted to the main job's 925 runs on digits
# (torch, tensorflow, mxnet: 0.98-1.25 ms a step, 1.1-2.9e-5 s a sample of the MLP's 1 MFLOP; R^2 0.62-0.99)


def rough_seconds(run: Run) -> float:
    """A run's length before any probe has timed its cell, to order trials by: each step's fixed cost (STEP_S) and
    its FLOPs at FLOPS (three times the model's forward FLOPs a sample, for the backward pass, times the batch), and
    the evaluation after each epoch (forward FLOPs times the validation and test samples). A model the registry does
    not hold (a Caffe net's own layers) counts its steps alone."""
    try:
        forward = get_model(run.cell.model).flops_per_sample(run.cell.input_shape, run.cell.classes)
    except KeyError:
        forward = 0
    flops = forward * (3.0 * run.steps * run.cell.batch_size + run.epochs * run.eval_samples)
    return run.steps * STEP_S + flops / FLOPS


def runs_of_plan(plan: list, val_fraction: float, device: str, threads: int, status: str = "run") -> list:
    """The Runs of planned trials (`sweep.plans.PlannedTrial`)."""
    return [run_of(p.planned, val_fraction, device, threads, status, p.attrs.get("default", "")) for p in plan]


def runs_of_space(space, trials: int, device: str, threads: int) -> list:
    """`trials` sampled trials of `space` as SAMPLES draws of its distribution, each weighed trials / SAMPLES."""
    fixed = {"dataset": space.dataset, "model": space.model}
    return [run_of({**draw, **fixed}, space.val_fraction, device, threads, label="sampled",
                   count=trials / SAMPLES) for draw in draw_configurations(space)]


def trial_slots(parallel: int, cpus_per_trial: float, gpus_per_trial: float, resources: dict = None) -> int:
    """Trials at once: --parallel, at most what the resources ({"CPU": n, "GPU": m}: a Ray cluster's, else this
    machine's) hold."""
    resources = resources or {"CPU": os.cpu_count() or 1, "GPU": _local_gpus()}
    slots = min(parallel, int(resources.get("CPU", 1) // cpus_per_trial) or 0)
    if gpus_per_trial:
        slots = min(slots, int(resources.get("GPU", 0) // gpus_per_trial))
    return slots


def _local_gpus() -> int:
    return gpu.visible_count() or 0


def cluster_resources(address: str) -> dict:
    """The Ray cluster's total resources, joined for the question (Ray is imported only here)."""
    return joined(address).cluster_resources()
