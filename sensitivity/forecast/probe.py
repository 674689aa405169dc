"""The throughput probe: a few hundred training steps of one framework, model, input shape, batch size and
device, on random data of the dataset's shape, through the adapter's own `train_epoch` (the step every trial
times as its train time). Start-up (import, build) and compile are timed apart from the steps, and so is one
pass of evaluation (`predict`, which every epoch runs over the validation and test sets). `cold_start_s` is what
a trial's worker of that framework pays once: the interpreter's start to the probe's first line, and the
framework's import.

The machine may be busy while it runs (other users' work, another sweep): a moment of that is not the machine's
speed. So the timed steps come in BLOCKS, each timed alone, and a step costs what it cost in the fastest block
(a block the scheduler gave the cores to); the evaluation pass is timed EVAL_REPEATS times, the fastest taken.
Beside the probe, the CPU time every other process used while it ran is read (`load.Load`), and reported with
the figures (`load_beside`: cores others kept busy, on average), so that a probe taken under load is said to be one
and is not cached as the host's speed (`throughput`).

It runs inside the framework's environment and imports neither Ray nor Optuna, so that it also runs on a bare
GPU machine: `python -m sensitivity.forecast.probe < cells.json` prints one JSON line per cell.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np
import psutil

from sensitivity import frameworks
from sensitivity.core import semantics
from sensitivity.core.models import get_model
from sensitivity.core.spec import TrialSpec
from sensitivity.forecast.load import Load
from sensitivity.trial.loop import initial_weights

WARMUP_STEPS = 10  # run before the timed steps: first-call allocations and lazy compiles
STEPS = 200  # timed steps per cell, fewer where they would pass MAX_STEP_SECONDS
MAX_STEP_SECONDS = 20.0  # the timed steps of one cell stop once they have taken this long
BLOCKS = 8  # the timed steps come in this many blocks; a step's time is that of the fastest block
EVAL_SAMPLES = 1000
EVAL_REPEATS = 3  # evaluation passes timed; the fastest is taken
LOADED_CORES = 0.5  # a probe beside which other processes kept more cores busy than this, on average, was loaded


@dataclass(frozen=True)
class Cell:
    """What a step's cost depends on: framework (and Keras backend), model, input, batch, device, threads,
    regime and optimizer."""
    framework: str
    model: str
    input_shape: tuple
    classes: int
    batch_size: int
    device: str = "cpu"
    threads: int = 1
    semantics: str = "native"
    optimizer: str = "momentum"
    backend: str = ""

    def key(self) -> str:
        return json.dumps({**asdict(self), "input_shape": list(self.input_shape)}, sort_keys=True)

    @classmethod
    def from_key(cls, key: str) -> "Cell":
        fields = json.loads(key)
        return cls(**{**fields, "input_shape": tuple(fields["input_shape"])})


_IMPORTS: dict = {}  # framework -> seconds its adapter's import took in this process


def loaded(figures: dict) -> bool:
    """Whether a probe's figures were measured while other processes kept the machine busy (`load_beside`)."""
    return (figures.get("load_beside") or 0.0) > LOADED_CORES


def measure(cell: Cell, steps: int = STEPS, process_s: float = 0.0) -> dict:
    """Time one cell in this process: start-up, compile, `steps` training steps after a warm-up, and one
    evaluation pass. Seconds per step and samples per second of each; `process_s`, the interpreter's start,
    makes `cold_start_s` with the framework's import."""

    started, load = time.perf_counter(), Load()
    if cell.framework not in _IMPORTS:
        frameworks.load_adapter(cell.framework)
        _IMPORTS[cell.framework] = time.perf_counter() - started
    spec = TrialSpec(framework=cell.framework, dataset="probe", model=cell.model, batch_size=cell.batch_size,
                     optimizer=cell.optimizer, semantics=cell.semantics, device=cell.device, threads=cell.threads,
                     lr=1e-4, iterations=WARMUP_STEPS + steps, backend=cell.backend or None)
    adapter = frameworks.load_adapter(cell.framework)
    model = get_model(cell.model).resolve(cell.classes)
    rng = np.random.default_rng(0)
    samples = max(cell.batch_size * 4, EVAL_SAMPLES)
    x = rng.random((samples, *cell.input_shape), dtype=np.float32)
    y = rng.integers(0, cell.classes, samples).astype(np.int64)
    adapter.setup(cell.threads or len(os.sched_getaffinity(0)), cell.device, 0)  # 0: as a trial, every core

    class _Shape:  # what initial_weights reads of a dataset
        input_shape, classes = tuple(cell.input_shape), cell.classes

    weights = initial_weights(semantics.resolve(spec).init, spec, model, _Shape)
    adapter.build(model, tuple(cell.input_shape), cell.classes, weights, spec, WARMUP_STEPS + steps)
    adapter.set_data(x, y)
    startup = time.perf_counter() - started
    tick = time.perf_counter()
    adapter.compile(cell.batch_size)
    compile_s = time.perf_counter() - tick
    batches = samples // cell.batch_size
    order = np.arange(batches * cell.batch_size).reshape(batches, cell.batch_size)
    rates = np.full(WARMUP_STEPS + steps, 1e-4)
    _steps(adapter, order, rates[:WARMUP_STEPS])
    energy = _energy_counter(cell.device)
    before = energy() if energy else None
    done, seconds, blocks = 0, 0.0, []
    block = max(1, -(-steps // BLOCKS))
    while done < steps and seconds < MAX_STEP_SECONDS:
        chunk = min(batches, block, steps - done)
        tick = time.perf_counter()
        _steps(adapter, order[:chunk], rates[:chunk])
        took = time.perf_counter() - tick
        seconds += took
        done += chunk
        blocks.append(took / chunk)
    joules = (energy() - before) / 1000 / done if before is not None else None
    evals = []
    for _ in range(EVAL_REPEATS):
        tick = time.perf_counter()
        adapter.predict(x[:EVAL_SAMPLES])
        evals.append(time.perf_counter() - tick)
    step_s = min(blocks)
    return {"cell": cell.key(), "framework_version": adapter.version(), "startup_s": startup,
            "cold_start_s": process_s + _IMPORTS[cell.framework], "compile_s": compile_s, "requested_steps": steps,
            "steps": done, "step_s": step_s, "step_s_mean": seconds / done, "blocks": len(blocks),
            "samples_per_s": cell.batch_size / step_s, "eval_samples_per_s": EVAL_SAMPLES / min(evals),
            "joules_per_step": joules, "load_beside": round(load.others(), 3)}


def _energy_counter(device: str):
    """A reader of the GPU's energy counter in mJ (NVML, Volta and newer), or None: on a CPU, without NVML."""
    if device == "cpu":
        return None
    try:
        # lazy: pynvml
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)  # the probe's only visible GPU
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception:  # no NVML, no driver, a GPU without the counter
        return None
    return lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)


def _steps(adapter, order: np.ndarray, rates: np.ndarray) -> None:
    """`len(order)` steps, whole passes over the probe's batches where it holds fewer."""
    for start in range(0, len(rates), len(order)):
        adapter.train_epoch(order[: len(rates) - start], rates[start:start + len(order)])


def main() -> int:
    """Read {"cells": [...keys], "steps": N} on stdin; print one JSON line per cell (its figures, or its
    error)."""
    process_s = time.time() - psutil.Process().create_time()
    request = json.load(sys.stdin)
    for key in request["cells"]:
        try:
            line = measure(Cell.from_key(key), request.get("steps", STEPS), process_s)
        except Exception as exc:  # one cell's failure is reported, the next is still measured
            line = {"cell": key, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
