"""Figures as the framework has them: the parameter count it builds and the threads it runs with, read
back after the setters ran (a warm worker cannot always change them)."""
import pytest

from sensitivity import datasets, frameworks
from sensitivity.datasets.base import Dataset
from sensitivity.core.spec import TrialSpec
from sensitivity.trial import loop
from sensitivity.trial.runner import Worker, run_trial


def spec(framework="torch", **overrides):
    return TrialSpec(**{**dict(framework=framework, dataset="digits", model="mlp", batch_size=64, lr=0.05,
                               epochs=1, threads=1), **overrides})


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_params_are_counted_by_the_framework_and_a_mismatch_is_flagged(monkeypatch):
    data = Dataset.load_npz(datasets.prepare("digits"))
    torch_adapter = type(frameworks.load_adapter("torch"))
    same = loop.run(spec(), data, "mlp", lambda event: None, 1)
    monkeypatch.setattr(torch_adapter, "parameter_count", lambda self: 7)
    other = loop.run(spec(), data, "mlp", lambda event: None, 1)
    assert same.params == same.env["params_spec"] > 1000 and same.env["params_mismatch"] is False
    assert other.params == 7 and other.env["params_spec"] == same.params and other.env["params_mismatch"] is True


@pytest.mark.skipif(not frameworks.importable("tensorflow"), reason="needs tensorflow")
def test_a_warm_tensorflow_worker_records_the_threads_it_keeps_not_those_asked():
    worker = Worker("modern", frameworks.worker_variables(spec("tensorflow")))
    try:
        first = worker.run(spec("tensorflow", threads=1))
        second = worker.run(spec("tensorflow", threads=2))  # TensorFlow's pools are sized once per process
    finally:
        worker.close()
    assert first.status == second.status == "ok", first.reason + second.reason
    assert (first.env["threads"], first.env["threads_requested"]) == (1, 1)
    assert (second.env["threads"], second.env["threads_requested"]) == (1, 2)


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_torch_takes_a_new_thread_count_in_a_warm_worker():
    worker = Worker("modern")
    try:
        results = [worker.run(spec(threads=n)) for n in (1, 2)]
    finally:
        worker.close()
    assert [(r.env["threads"], r.env["threads_requested"]) for r in results] == [(1, 1), (2, 2)]


@pytest.mark.parametrize("framework", ["mxnet", "chainer", "theano", "pytensor"])
def test_threads_are_read_back_from_the_library_that_runs_the_work(framework):
    """mxnet: its OpenMP runtime; chainer, theano, pytensor: the BLAS numpy loaded."""
    if not frameworks.probe(framework)[1]:
        pytest.skip(f"{framework}: {frameworks.probe(framework)[2]}")
    result = run_trial(spec(framework, threads=2))
    assert result.status == "ok", result.reason + result.stderr_tail
    assert (result.env["threads"], result.env["threads_requested"]) == (2, 2)
    assert result.params == result.env["params_spec"] and not result.env["params_mismatch"]


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_a_pinned_trial_runs_on_its_core_and_every_thread_gets_the_process_set_back():
    import os
    import threading

    data = Dataset.load_npz(datasets.prepare("digits"))
    own, seen, started = os.sched_getaffinity(0), [], []

    def emit(event):  # inside the pinned run: this thread's set, and a thread started meanwhile
        seen.append(os.sched_getaffinity(0))
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait, daemon=True)
        thread.start()
        started.append((thread, stop))

    result = loop.run(spec(pin_cpus=[0], epochs=2), data, "mlp", emit, 1)
    assert result.env["pinned_cpus"] == [0] and seen and all(cpus == {0} for cpus in seen)
    assert os.sched_getaffinity(0) == own
    assert all(os.sched_getaffinity(thread.native_id) == own for thread, _ in started)
    for _, stop in started:
        stop.set()
