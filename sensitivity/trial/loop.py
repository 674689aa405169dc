"""The one training loop every framework shares; it runs inside the worker process.

It draws each epoch's batch order with numpy from the seed, computes each step's learning rate, calls the
adapter, times every phase apart (setup, compile, train, test), evaluates after each epoch, stops at the
first non-finite loss (status diverged, with the accuracy of the model it left), and returns a TrialResult.
"""
from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path
from typing import Callable

import numpy as np

from sensitivity import frameworks
from sensitivity.core import semantics
from sensitivity.core.correctness import pack
from sensitivity.core.paths import atomic_write
from sensitivity.datasets.base import Dataset, split_validation
from sensitivity.frameworks import gpu
from sensitivity.frameworks.base import Adapter
from sensitivity.core.models import get_model, init_weights, layers_from_dicts
from sensitivity.core.optim import lr_schedule
from sensitivity.core.spec import EpochRecord, TrialResult, TrialSpec
from sensitivity.trial import environment
from sensitivity.trial.monitor import ResourceMonitor

EVAL_BATCH = 1000


def accuracy(adapter: Adapter, x: np.ndarray, y: np.ndarray) -> float:
    return None if len(y) == 0 else float(correct_samples(adapter, x, y).mean())


def correct_samples(adapter: Adapter, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Whether the model classifies each sample correctly."""
    return np.concatenate([np.argmax(adapter.predict(x[i:i + EVAL_BATCH]), axis=1) == y[i:i + EVAL_BATCH]
                           for i in range(0, len(y), EVAL_BATCH)])


def evaluate(adapter: Adapter, x_val: np.ndarray, y_val: np.ndarray, data: Dataset) -> tuple:
    """(whether each test sample is classified correctly, the seconds that took, the validation accuracy) of the
    weights as they are: read after every epoch, and the last epoch's are the trial's."""
    tick = time.perf_counter()
    correct = correct_samples(adapter, data.x_test, data.y_test)
    return correct, time.perf_counter() - tick, accuracy(adapter, x_val, y_val)


def run(spec: TrialSpec, data: Dataset, model_name: str, emit: Callable[[dict], None],
        threads: int) -> TrialResult:
    """Train and evaluate one trial; `emit` receives one event dict per epoch; pinned to `spec.pin_cpus` while
    it runs, where given."""
    if not spec.pin_cpus:
        return _run(spec, data, model_name, emit, threads)
    own = _pin(set(spec.pin_cpus))
    try:
        result = _run(spec, data, model_name, emit, threads)
        result.env["pinned_cpus"] = sorted(os.sched_getaffinity(0))
        return result
    finally:  # the threads started meanwhile inherited the pinned set: they get the process's own
        for thread in map(int, os.listdir("/proc/self/task")):
            _set_affinity(thread, own.get(thread, own[0]))


def _pin(cpus: set) -> dict:
    """Pin every thread of this process (a framework's pools start theirs at import) to `cpus`; returns each
    thread's own set, to put back (0: the calling thread's, the process's own)."""
    own = {0: os.sched_getaffinity(0)}
    os.sched_setaffinity(0, cpus)  # this thread first: cores this machine lacks raise here
    for thread in map(int, os.listdir("/proc/self/task")):
        if thread == threading.get_native_id():
            continue
        try:
            own[thread] = os.sched_getaffinity(thread)
        except OSError:  # the thread ended meanwhile
            continue
        _set_affinity(thread, cpus)
    return own


def _set_affinity(thread: int, cpus: set) -> None:
    try:
        os.sched_setaffinity(thread, cpus)
    except OSError:
        pass


def _run(spec: TrialSpec, data: Dataset, model_name: str, emit: Callable[[dict], None], threads: int) -> TrialResult:
    started = time.perf_counter()
    adapter = frameworks.load_adapter(spec.framework)
    model = layers_from_dicts(model_name, spec.layers) if spec.layers else get_model(model_name)
    model = model.resolve(data.classes)
    x_train, y_train, x_val, y_val = split_validation(data.x_train, data.y_train, spec.val_fraction, spec.seed)
    steps = len(y_train) // spec.batch_size
    if steps == 0:
        raise ValueError(f"batch_size {spec.batch_size} exceeds the {len(y_train)} training samples")
    total_steps = spec.iterations or steps * spec.epochs
    resolved = semantics.resolve(spec)
    adapter.setup(threads, spec.device, spec.seed)
    weights = initial_weights(resolved.init, spec, model, data)
    adapter.build(model, data.input_shape, data.classes, weights, spec, total_steps)
    adapter.set_data(x_train, y_train)
    placement = verify_placement(adapter, spec)
    setup_time = time.perf_counter() - started

    epochs = math.ceil(total_steps / steps)
    tick = time.perf_counter()
    adapter.compile(spec.batch_size)
    last = total_steps - (epochs - 1) * steps
    if last != steps and hasattr(adapter, "compile_epoch"):  # a shorter last epoch is another program
        adapter.compile_epoch(last, spec.batch_size)
    compile_time = time.perf_counter() - tick

    rng = np.random.default_rng(spec.seed)
    if resolved.framework_schedule and not resolved.stock:  # a stock optimizer steps its own scheduler
        rates = np.asarray(adapter.framework_rates(spec, total_steps), np.float64)
    else:
        rates = lr_schedule(spec, total_steps)
    if getattr(adapter, "backend", None):  # a multi-backend framework: record the backend that ran
        spec = spec.model_copy(update={"backend": adapter.backend})
    result = TrialResult(status="ok", spec=spec.model_dump(), steps=0, params=adapter.parameter_count())
    train_time, loss, evaluated = 0.0, None, None
    with ResourceMonitor(spec.device) as monitor:
        for epoch in range(1, epochs + 1):
            order = rng.permutation(len(y_train))[: steps * spec.batch_size].reshape(steps, spec.batch_size)
            order = order[: total_steps - (epoch - 1) * steps]  # the last epoch may stop early
            tick = time.perf_counter()
            stats = adapter.train_epoch(order, rates[(epoch - 1) * steps: epoch * steps])
            seconds = time.perf_counter() - tick
            train_time += seconds
            result.steps += stats.steps
            if stats.diverged or not math.isfinite(stats.mean_loss):
                result.status = "diverged"
                result.reason = (f"loss became non-finite at epoch {epoch}, step {stats.steps} "
                                 f"(lr {rates[(epoch - 1) * steps + stats.steps - 1]:.4g})")
                result.curve.append(vars(EpochRecord(epoch, None, None, None, seconds)))
                emit({"event": "epoch", **result.curve[-1]})
                break
            loss = stats.mean_loss
            evaluated = evaluate(adapter, x_val, y_val, data)
            correct, _, val = evaluated
            record = EpochRecord(epoch, loss, val, float(correct.mean()) if len(correct) else None, seconds)
            if spec.keep_weights and spec.keep_checkpoints and epoch < epochs:  # the last one is the trained weights
                save_weights(adapter.get_weights(), checkpoint_path(spec.keep_weights, epoch))
            result.curve.append(vars(record))
            emit({"event": "epoch", **vars(record)})
    if result.status != "ok":  # diverged: the last reading is of the epoch before; read the weights it ends with
        evaluated = evaluate(adapter, x_val, y_val, data)
    correct, result.test_time_s, result.val_accuracy = evaluated
    result.accuracy = float(correct.mean())
    if spec.record_correct:
        result.test_correct = pack(correct)
    if spec.keep_weights:
        save_weights(adapter.get_weights(), spec.keep_weights)
    samples = result.steps * spec.batch_size
    result.loss = loss
    result.setup_time_s, result.compile_time_s, result.train_time_s = setup_time, compile_time, train_time
    result.throughput = samples / train_time if train_time > 0 else None
    # forward and backward cost about three forward passes per trained sample
    flops = 3 * model.flops_per_sample(data.input_shape, data.classes) * samples
    result.flops_per_s = flops / train_time if train_time > 0 else None
    result.peak_rss_mb, result.cpu_percent, result.gpu = monitor.peak_rss_mb, monitor.cpu_percent, monitor.gpu
    result.gpu_error = monitor.gpu_error
    result.env = environment.describe(spec, adapter, threads, model_name, (monitor.gpu or {}).get("name"))
    result.env.update(environment.params_check(result.params, model.param_count(data.input_shape, data.classes)))
    if spec.deterministic:
        flags, remaining = gpu.DETERMINISM[spec.framework]
        result.env["determinism"] = {"flags": flags, "remaining": remaining}
    if placement is not None:
        result.gpu = device_figures(adapter, monitor.gpu)
        result.env.update(gpu_placement=placement, gpu_driver=gpu.driver()[0])
    result.wall_time_s = time.perf_counter() - started
    return result


def verify_placement(adapter: Adapter, spec: TrialSpec):
    """On a GPU, what the framework reports of the device once the model and data are placed (PlacementError
    if either is not on the GPU); None on a CPU."""
    if spec.device == "cpu":
        return None
    if not hasattr(adapter, "placement"):
        raise gpu.no_gpu(spec.framework, "its adapter cannot verify GPU placement")
    return adapter.placement()


def device_figures(adapter: Adapter, nvml: dict) -> dict:
    """The trial's GPU figures: its own peak from the framework's allocator, and NVML's, which are the whole
    GPU's (labelled so; shared with other trials when the trial had a fraction of the GPU)."""
    share = gpu.share()
    return {**(nvml or {}), "allocator_peak_mb": adapter.peak_device_memory_mb(),
            "nvml_scope": "whole GPU" + (f", shared (this trial's share {share:g})" if share and share < 1 else "")}


def initial_weights(source: str, spec: TrialSpec, model, data: Dataset):
    """The initial weights of the init knob's source: the neutral numpy weights (canonical), None for the
    framework's own initialiser, or numpy draws from another framework's documented one (an ablation)."""
    if source == semantics.CANONICAL:
        return init_weights(model, data.input_shape, data.classes, spec.seed)
    if source == spec.framework:
        return None
    return semantics.draw_init(source, model.param_shapes(data.input_shape, data.classes), spec.seed)


def checkpoint_path(weights: str, epoch: int) -> str:
    """Where a trial that keeps checkpoints saves its weights after `epoch` (results/weights/S/12.npz ->
    results/weights/S/12.epoch3.npz); after its last epoch they are the trained weights themselves."""
    path = Path(weights)
    return str(path.with_name(f"{path.stem}.epoch{epoch}{path.suffix}"))


def save_weights(weights: list, path: str) -> None:
    """The trained weights as kernel_0, bias_0, ... in neutral layout; written atomically."""
    arrays = {f"{kind}_{i}": array for i, pair in enumerate(weights) for kind, array in zip(("kernel", "bias"), pair)}
    with atomic_write(path) as f:
        np.savez(f, **arrays)
