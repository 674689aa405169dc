"""The keeper of a node's warm framework workers (sensitivity.sweep.keeper): in-process, where its lending,
its independence of earlier trials and its ends are checked on real workers; and on a real Ray cluster that two
sweeps join in turn, where the second sweep starts no worker."""
import os
import subprocess
import sys
import time

import optuna
import pytest

from sensitivity import frameworks
from sensitivity.core.spec import TrialSpec
from sensitivity.sweep.keeper import Keeper
from test_cluster import cluster_nodes, space_file  # noqa: F401  (a fixture)


def spec(framework: str, **overrides) -> TrialSpec:
    values = dict(framework=framework, dataset="digits", model="mlp", batch_size=32, lr=0.05, optimizer="momentum",
                  momentum=0.9, epochs=2, threads=1)
    return TrialSpec(**{**values, **overrides})


def run(keeper: Keeper, trial: TrialSpec, lease: str, caller_pid: int = None) -> dict:
    env = frameworks.FRAMEWORKS[trial.framework].env
    events = list(keeper.run(trial.model_dump_json(), env, {"OMP_NUM_THREADS": "1"}, lease,
                             caller_pid or os.getpid()))
    assert events[-1]["event"] == "trial_result", events[-1]
    return events[-1]


@pytest.mark.parametrize("framework", ["torch", "mxnet"])  # one framework of each environment
def test_a_lent_worker_gives_a_trial_the_figures_it_has_cold(framework):
    """A, then B (another configuration), then A again in the same warm worker: A's curve and accuracy are
    those it had in a fresh worker."""
    if not frameworks.importable(framework) and not frameworks.probe(framework)[1]:
        pytest.skip(f"{framework} is not installed")
    keeper = Keeper()
    first = run(keeper, spec(framework), "a")
    other = run(keeper, spec(framework, lr=0.2, batch_size=16, seed=3), "b")
    again = run(keeper, spec(framework), "c")
    assert first["worker"]["cold"] and not other["worker"]["cold"] and not again["worker"]["cold"]
    assert first["worker"]["pid"] == other["worker"]["pid"] == again["worker"]["pid"]
    assert keeper.counts() == {"idle": 1, "lent": 0, "started": 1}
    a, b = first["result"], again["result"]
    assert a["status"] == b["status"] == "ok" and other["result"]["status"] == "ok"
    assert [e["train_loss"] for e in a["curve"]] == [e["train_loss"] for e in b["curve"]]
    assert a["accuracy"] == b["accuracy"] and a["accuracy"] != other["result"]["accuracy"]
    assert b["setup_time_s"] < a["setup_time_s"]  # the framework was imported once


def test_a_trial_whose_caller_is_gone_ends_its_worker_and_the_idle_ones_time_out():
    keeper = Keeper(idle_s=1.0)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    started = time.monotonic()
    ended = run(keeper, spec("torch", epochs=200), "gone", caller_pid=gone.pid)
    assert time.monotonic() - started < 60  # 200 epochs take minutes; the trial ended once its caller was gone
    assert ended["result"]["status"] == "failed" and ended["result"]["accuracy"] is None, ended["result"]
    assert keeper.counts()["idle"] == 0  # a killed worker is not lent again
    run(keeper, spec("torch", epochs=1), "next")
    assert keeper.counts() == {"idle": 1, "lent": 0, "started": 2}
    deadline = time.monotonic() + 10
    while keeper.counts()["idle"] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert keeper.counts()["idle"] == 0  # idle past 1 s: ended


def test_a_trial_whose_stream_is_closed_ends_its_worker_which_is_not_lent_again():
    keeper = Keeper()
    trial = spec("torch", epochs=5000)
    stream = keeper.run(trial.model_dump_json(), frameworks.FRAMEWORKS["torch"].env, {"OMP_NUM_THREADS": "1"},
                        "closed", os.getpid())
    assert next(e for e in stream if e["event"] == "epoch")["epoch"] == 1
    stream.close()  # as Ray may close a stream whose caller left, the trial mid-run
    assert keeper.counts() == {"idle": 0, "lent": 0, "started": 1}
    assert run(keeper, spec("torch", epochs=1), "next")["worker"]["cold"]


def test_the_second_sweep_on_a_cluster_starts_no_worker(cluster_nodes, tmp_path):  # noqa: F811
    address, _ = cluster_nodes
    db = f"sqlite:///{tmp_path}/s.db"
    for study in ("first", "second"):
        space = space_file(tmp_path, study, epochs=1)
        proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--trials", "4",
                               "--parallel", "2", "--address", address, "--storage", db, "--no-progress"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    workers = {study: [t.user_attrs["env"]["worker"] for t in optuna.load_study(study_name=study, storage=db).trials]
               for study in ("first", "second")}
    assert len(workers["first"]) == len(workers["second"]) == 4
    assert 1 <= sum(w["cold"] for w in workers["first"]) <= 2  # one per node that ran a trial
    assert not any(w["cold"] for w in workers["second"]), workers["second"]
    assert {w["pid"] for w in workers["second"]} <= {w["pid"] for w in workers["first"]}
