"""One worker recipe (`runner.worker_setup`): a trial, the sweep, timing, robustness and the forecast's probe start
their framework processes with the same environment for the same spec; read off the started processes.
The driver's modules (pandas, Ray) are imported inside the test that needs them: the legacy environment collects
this file too."""
from __future__ import annotations

import os

import psutil
import pytest

from sensitivity import frameworks
from sensitivity.core import envs
from sensitivity.core.spec import TrialSpec
from sensitivity.trial import runner
from sensitivity.trial.pool import WorkerPool
from sensitivity.trial.runner import Worker, worker_setup

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def steering(environ: dict) -> dict:
    """What a process environment sets beyond this one's: the worker's threads, backend, GPU, determinism and
    its environment's own variables."""
    return {k: v for k, v in environ.items() if os.environ.get(k) != v}


def started(worker: Worker) -> dict:
    """The environment of `worker`'s process, as the kernel holds it."""
    worker.start()
    try:
        return steering(psutil.Process(worker.pid).environ())
    finally:
        worker.close()


def test_the_setup_carries_the_threads_the_backend_and_what_ray_set(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # as Ray sets it in an actor given GPU 3
    env, variables = worker_setup(TrialSpec(framework="keras", backend="jax", dataset="digits", threads=2))
    assert env == "modern"
    assert variables == {"CUDA_VISIBLE_DEVICES": "3", "OMP_NUM_THREADS": "2", "KERAS_BACKEND": "jax"}
    assert worker_setup(TrialSpec(framework="mxnet", dataset="digits"))[0] == "legacy"


def test_the_sweep_timing_robustness_and_the_forecast_start_the_same_worker(tmp_path):
    from tests.analysis.planted import as_study, sweep_rows
    import numpy as np

    from sensitivity.experiments import robustness
    from sensitivity.experiments.timing import timing_plan
    from sensitivity.forecast import throughput
    from sensitivity.forecast.probe import Cell
    from sensitivity.sweep import dispatch

    study = as_study(sweep_rows(np.random.default_rng(0), configs=6), "t", f"sqlite:///{tmp_path}/optuna.db")
    plan = timing_plan(study, 1)[0]
    timed = next(p.planned for p in plan if p.params["framework"] == "torch")
    spec = TrialSpec(dataset="digits", **{**timed, "framework": "torch"})  # threads 1, pinned, as timing runs it
    assert spec.threads == 1
    assert dispatch.worker_setup is worker_setup  # the sweep's trainable sets up the keeper's worker with it
    assert robustness.worker_setup is worker_setup  # and robustness its attacks' workers, from the trained spec
    sweep = WorkerPool().take(*worker_setup(spec))[0]  # what the keeper's pool lends for what the trainable sends
    attacks = WorkerPool().take(*robustness.worker_setup(spec))[0]  # robustness's pool
    probe_env, probe_variables = throughput._environment(Cell(framework="torch", model="mlp", input_shape=(64,),
                                                                classes=10, batch_size=32, threads=spec.threads))
    assert (attacks.env, attacks.variables) == (sweep.env, sweep.variables) == (probe_env, dict(probe_variables))
    seen = started(sweep)
    assert seen == started(attacks) == steering(envs.worker_environ(probe_env, dict(probe_variables)))
    assert seen["OMP_NUM_THREADS"] == "1"  # an attack runs under the threads of the training it attacks


def test_a_trial_runs_in_a_worker_of_that_setup():
    spec = TrialSpec(framework="torch", dataset="digits", model="mlp", epochs=1, batch_size=128, threads=1, seed=0)
    seen = []

    def on_event(event: dict) -> None:
        if event.get("event") == "epoch" and not seen:
            child = next(p for p in psutil.Process().children() if "sensitivity.trial.worker" in " ".join(p.cmdline()))
            seen.append(steering(child.environ()))

    result = runner.run_trial(spec, on_event)
    assert result.status == "ok", result.reason
    assert seen == [started(Worker.for_spec(spec))]
    assert seen[0]["OMP_NUM_THREADS"] == "1"
