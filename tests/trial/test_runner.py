"""Every way a trial can end, through a real worker process of the modern environment."""
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from fault_worker import inject

from sensitivity import frameworks
from sensitivity.core.spec import TrialSpec
from sensitivity.trial.runner import Worker, WorkerError, run_trial, worker_command

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def digits_spec(**overrides):
    values = dict(framework="torch", dataset="digits", batch_size=32, lr=0.05, optimizer="momentum",
                  momentum=0.9, epochs=3, threads=1)
    values.update(overrides)
    return TrialSpec(**values)


def test_ok_trial_reports_score_cost_curve_and_environment():
    events = []
    result = run_trial(digits_spec(val_fraction=0.2), on_event=events.append)
    assert result.status == "ok", result.reason + result.stderr_tail
    assert result.accuracy > 0.85 and result.val_accuracy > 0.85
    assert [e["epoch"] for e in events if e["event"] == "epoch"] == [1, 2, 3]
    assert len(result.curve) == 3 and all(p["seconds"] > 0 for p in result.curve)
    assert result.curve[-1]["train_loss"] < result.curve[0]["train_loss"]
    for field in ("setup_time_s", "train_time_s", "test_time_s", "throughput", "peak_rss_mb", "cpu_percent",
                  "flops_per_s"):
        assert getattr(result, field) > 0, field
    assert result.gpu is None
    assert result.steps % 3 == 0
    assert result.throughput == pytest.approx(result.steps * 32 / result.train_time_s)
    assert result.env["framework_version"].startswith("2.") and result.env["seed"] == 0
    assert result.env["init"] == "torch" and result.env["threads"] == 1  # native: torch's own initialiser
    assert result.env["threads_requested"] == 1 and not result.env["params_mismatch"]
    assert result.params == result.env["params_spec"] > 0
    assert result.env["semantics"]["regime"] == "native"
    assert result.env["semantics"]["optimizer"].startswith("torch.optim.SGD")
    assert result.env["numerics"]["loss_reduction"] == "mean" and result.env["numerics"]["dtype"] == "float32"
    assert_env(result.env, "host", "cpu", "git_revision", "python", "framework", "framework_version", "seed")
    assert result.env["gpu"] is None  # a CPU trial: no GPU model


DRIVER_KNOWN = ("framework", "environment", "python", "interpreter", "host", "cpu", "git_revision", "seed")


def assert_env(env, *keys):
    missing = [key for key in keys if key not in env or env[key] in (None, "")]
    assert not missing, (missing, env)
    assert "gpu" in env and env["seed"] == 0 and env["framework"] == "torch"


def test_warm_worker_reruns_from_a_fresh_model_and_reseeded_generators():
    worker = Worker("modern")
    try:
        first = worker.run(digits_spec(epochs=2))
        pid = worker.pid
        second = worker.run(digits_spec(epochs=2))
        assert worker.pid == pid  # the same process, framework imported once
    finally:
        worker.close()
    assert first.status == second.status == "ok"
    assert [p["train_loss"] for p in first.curve] == [p["train_loss"] for p in second.curve]
    assert first.accuracy == second.accuracy
    assert second.setup_time_s < first.setup_time_s  # no second import


def test_warm_worker_reports_each_trials_own_peak_rss(monkeypatch):
    inject(monkeypatch, "alloc")  # 400 MB in the first trial only
    worker = Worker("modern")
    try:
        big = worker.run(digits_spec(epochs=1))
        small = worker.run(digits_spec(epochs=1))
    finally:
        worker.close()
    assert big.status == small.status == "ok"
    assert big.peak_rss_mb > 400 and small.peak_rss_mb < big.peak_rss_mb - 300


def test_exception_in_trial_is_a_failed_result_with_traceback():
    result = run_trial(digits_spec(batch_size=100_000))
    assert result.status == "failed"
    assert "batch_size 100000 exceeds" in result.reason
    assert "Traceback" in result.stderr_tail
    assert result.accuracy is None and result.curve == []


class SlowStderrWorker(Worker):
    """Reads the worker's stderr slowly, so a result always arrives before the traceback is read."""

    def _stderr_line(self, line):
        time.sleep(0.02)
        super()._stderr_line(line)


def test_result_waits_for_the_whole_stderr(monkeypatch):
    inject(monkeypatch, "raise")
    worker = SlowStderrWorker("modern")
    try:
        result = worker.run(digits_spec(epochs=1))
        again = worker.run(digits_spec(epochs=1))  # the second request waits for its own end marker
    finally:
        worker.close()
    for r in (result, again):
        assert r.status == "failed" and "Traceback" in r.stderr_tail
        assert r.stderr_tail.rstrip().endswith("RuntimeError: fault injected by SENSITIVITY_WORKER_FAULT=raise")
        assert "end of request output" not in r.stderr_tail


def test_segfault_is_a_failed_result_naming_the_signal(monkeypatch):
    inject(monkeypatch, "segfault")
    result = run_trial(digits_spec())
    assert result.status == "failed"
    assert "SIGSEGV" in result.reason
    assert result.accuracy is None


def test_worker_exit_without_result_is_failed(monkeypatch):
    inject(monkeypatch, "exit")
    result = run_trial(digits_spec())
    assert result.status == "failed" and "exited with code 3" in result.reason
    assert_env(result.env, *DRIVER_KNOWN)
    assert result.env["environment"] == "modern" and result.env["gpu"] is None


def test_exception_result_carries_the_driver_known_environment(monkeypatch):
    inject(monkeypatch, "raise")
    result = run_trial(digits_spec(epochs=1))
    assert result.status == "failed" and "RuntimeError" in result.reason
    assert_env(result.env, *DRIVER_KNOWN)
    assert [p["epoch"] for p in result.curve] == [1]  # raised after its first epoch, which it keeps


@pytest.mark.parametrize("framework", ["torch", "chainer"])
def test_the_fault_worker_runs_in_either_environment(monkeypatch, framework):
    """tests/fault_worker.py wraps the real worker under the interpreter of the framework's environment."""
    if not frameworks.probe(framework)[1]:
        pytest.skip(f"needs {framework} in its environment")
    inject(monkeypatch, "raise")
    result = run_trial(digits_spec(framework=framework, epochs=1))
    assert result.status == "failed" and result.env["environment"] == frameworks.FRAMEWORKS[framework].env
    assert result.stderr_tail.rstrip().endswith("RuntimeError: fault injected by SENSITIVITY_WORKER_FAULT=raise")
    assert [p["epoch"] for p in result.curve] == [1]


def test_the_real_worker_has_no_fault_hook(monkeypatch):
    """Without SENSITIVITY_TEST_WORKER the runner starts the real worker, which no fault variable reaches."""
    monkeypatch.setenv("SENSITIVITY_WORKER_FAULT", "exit")
    monkeypatch.delenv("SENSITIVITY_TEST_WORKER", raising=False)
    assert worker_command("python") == ["python", "-m", "sensitivity.trial.worker"]
    result = run_trial(digits_spec(epochs=1))
    assert result.status == "ok", result.reason


@pytest.mark.parametrize("name", ["../sensitivity/cli", "/bin/sh", "no_such_worker", "fault_worker.py", "os"])
def test_a_test_worker_is_only_a_file_of_tests(monkeypatch, name):
    monkeypatch.setenv("SENSITIVITY_TEST_WORKER", name)
    with pytest.raises(WorkerError, match="SENSITIVITY_TEST_WORKER=.*not a test worker of .*tests") as found:
        worker_command("python")
    assert "\n" not in str(found.value)
    monkeypatch.setenv("SENSITIVITY_TEST_WORKER", "fault_worker")
    assert worker_command("python") == ["python", str(Path(__file__).resolve().parents[1] / "fault_worker.py")]


def test_memory_exhaustion_is_a_failed_result_saying_out_of_memory(monkeypatch):
    inject(monkeypatch, "oom")  # a real MemoryError under a lowered RLIMIT_AS
    result = run_trial(digits_spec(epochs=2))
    assert result.status == "failed" and result.reason.startswith("out of memory: MemoryError"), result.reason
    assert "MemoryError" in result.stderr_tail and result.accuracy is None


def test_torch_out_of_memory_is_labelled_out_of_memory_as_the_others_are(monkeypatch):
    inject(monkeypatch, "torch_oom")  # torch's own RuntimeError: "DefaultCPUAllocator: can't allocate memory"
    result = run_trial(digits_spec(epochs=2))
    assert result.status == "failed" and result.reason.startswith("out of memory: RuntimeError"), result.reason
    assert "can't allocate memory" in result.reason and result.accuracy is None


def test_sigkill_mid_epoch_is_failed_with_reason():
    worker = Worker("modern")
    killed = threading.Event()

    def kill_on_first_epoch(event):
        if event["event"] == "epoch" and not killed.is_set():
            killed.set()
            os.kill(worker.pid, signal.SIGKILL)

    try:
        result = worker.run(digits_spec(epochs=50), on_event=kill_on_first_epoch)
    finally:
        worker.close()
    assert killed.is_set()
    assert result.status == "failed"
    assert "SIGKILL" in result.reason and "out-of-memory" in result.reason
    epochs = [p["epoch"] for p in result.curve]  # the epochs it reported before the kill are kept
    assert epochs == list(range(1, len(epochs) + 1)) and 1 <= len(epochs) < 50


def test_timeout_kills_the_worker_and_reports_timeout():
    worker = Worker("modern")
    try:
        result = worker.run(digits_spec(epochs=10_000, timeout=8))
        pid = worker.pid
    finally:
        worker.close()
    assert result.status == "timeout"
    assert "8 s timeout" in result.reason
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_timeout_bounds_the_workers_start(monkeypatch):
    inject(monkeypatch, "hang_start")
    worker = Worker("modern")
    tick = time.monotonic()
    try:
        result = worker.run(digits_spec(timeout=3))
        pid = worker.pid
    finally:
        worker.close()
    assert time.monotonic() - tick < 30  # not the 120 s ready wait
    assert result.status == "timeout" and "3 s timeout" in result.reason and "not ready" in result.reason
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_divergence_stops_at_once_with_chance_accuracy():
    spec = TrialSpec(framework="torch", dataset="mnist5k", model="lenet5", batch_size=64, lr=50,
                     optimizer="sgd", epochs=5, threads=2)
    result = run_trial(spec)
    assert result.status == "diverged"
    assert len(result.curve) == 1 and "epoch 1" in result.reason
    assert result.accuracy is not None and result.accuracy < 0.2  # the model it left: chance level
    assert result.loss is None


def test_missing_environment_is_a_failed_result(monkeypatch):
    monkeypatch.setenv("SENSITIVITY_PYTHON_MODERN", "/nonexistent/python")
    result = run_trial(digits_spec())
    assert result.status == "failed" and "environment 'modern' is missing" in result.reason
    assert result.env["interpreter"] == "/nonexistent/python" and result.env["host"] and result.env["seed"] == 0


def test_a_killed_process_ends_nothing_of_the_worker_started_after_it():
    """A scheduler kills a pruned trial's worker and the next trial starts a new one at once: the old process's
    readers, which see its end only later, must put that end into its own queue and not the new one's (where
    it read as "did not start" or "exited before reporting a result": a trial FAIL under load in CI)."""
    worker = Worker("modern")
    try:
        worker.start()
        old = worker.proc
        worker.start()  # the new process starts before the old one's readers have seen its end
        os.killpg(old.pid, signal.SIGKILL)
        old.wait()
        time.sleep(0.5)  # the old readers reach the end of its output now
        assert worker.alive() and worker.events.empty()
        result = worker.run(digits_spec(epochs=1))
    finally:
        worker.close()
    assert result.status == "ok", result.reason


def test_checkpoints_are_kept_beside_the_trained_weights(tmp_path):
    """keep_checkpoints saves each epoch's weights; after the last epoch they are the trained weights."""
    from sensitivity.trial.attacks import load_weights
    from sensitivity.trial.loop import checkpoint_path

    weights = str(tmp_path / "7.npz")
    result = run_trial(digits_spec(epochs=3, keep_weights=weights, keep_checkpoints=True))
    assert result.status == "ok", result.reason
    assert [Path(checkpoint_path(weights, e)).exists() for e in (1, 2, 3)] == [True, True, False]
    first, final = load_weights(checkpoint_path(weights, 1)), load_weights(weights)
    assert len(first) == len(final) and all(a.shape == b.shape for (a, _), (b, _) in zip(first, final))
    assert any(not np.array_equal(a, b) for (a, _), (b, _) in zip(first, final))  # trained on after epoch 1
