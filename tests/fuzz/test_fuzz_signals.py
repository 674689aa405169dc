"""Issue 44: SIGTERM and SIGINT end a running sweep in the tool's words. Real sweeps (digits, the MLP, long
trials, two at once) in a session of their own: `kill -TERM PID` (what systemd and schedulers send), then Ctrl-C as
a terminal sends it (SIGINT to the whole process group) on the rerun. Each ends with exit 143 or 130 and one line
that names the signal and the command to run again, with no Ray or Tune text on stderr (Optuna's own "A new study
created" or "Using an existing study" line aside); every process the driver started is gone; the study holds no
RUNNING trial, the interrupted ones FAIL and queued again; a rerun reaches exactly N, and a second runs nothing.
With `--address`, the cluster keeps running. Before: Ray's 6-line C++ dump and exit 1 for SIGTERM, 3 lines of Tune
advising Tuner.restore for Ctrl-C."""
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import psutil
import pytest
from fuzz_runner import OUTCOMES
from optuna.trial import TrialState

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
SPACE = """study: s
dataset: digits
model: mlp
frameworks: [torch]
parameters:
  lr: {{type: float, low: 0.01, high: 0.3, log: true}}
fixed: {{epochs: {epochs}, optimizer: momentum, momentum: 0.9}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
"""
N = 3
RAY_WORDS = ("ray", "tune", "traceback", "gcs", "raylet", "received at time", "logging.cc")


def start(tmp_path, *extra, epochs=5000):
    (tmp_path / "s.yaml").write_text(SPACE.format(epochs=epochs))
    argv = ["sweep", "s.yaml", "--trials", str(N), "--parallel", "2", "--no-progress", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("SENSITIVITY_STORAGE", "RAY_ADDRESS")}
    proc = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, "sensitivity " + " ".join(argv)


def running(tmp_path) -> int:
    try:
        with sqlite3.connect(f"file:{tmp_path}/results/optuna.db?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM trials WHERE state = 'RUNNING'").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_until_running(proc, tmp_path, count=2, timeout=180):
    deadline = time.monotonic() + timeout
    while running(tmp_path) < count:
        assert proc.poll() is None, f"exit {proc.returncode}: {proc.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, "the trials never ran"
        time.sleep(0.5)
    time.sleep(2)  # into their first epochs


def descendants(pid: int) -> list:
    return [p for p in psutil.Process(pid).children(recursive=True)]


def stop(proc, how: str) -> tuple:
    """Send the signal (`kill -TERM PID`, or SIGINT to the process group as a terminal's Ctrl-C does); (exit
    code, stdout, stderr, seconds to exit, processes the driver had started)."""
    started_ray = descendants(proc.pid)
    sent = time.monotonic()
    if how == "SIGTERM":
        os.kill(proc.pid, signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err, time.monotonic() - sent, started_ray


def gone_within(processes, seconds=10.0) -> list:
    """The processes of `processes` still running after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        left = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


OPTUNA_INFO = ("A new study created in RDB with name: s", "Using an existing study with `study_name='s'`")


def tool_lines(err: str) -> list:
    """stderr without Optuna's INFO line on the study it created or loaded (Optuna's, not Ray's or Tune's)."""
    return [line for line in err.splitlines() if not (line.startswith("[I ") and any(m in line for m in OPTUNA_INFO))]


def study(tmp_path):
    return optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/results/optuna.db")


def check_stopped(tmp_path, how, code, err, elapsed, rerun, record) -> None:
    lines = tool_lines(err)
    OUTCOMES["signals"].append({"name": record, "exit": code, "created": [], "stderr": err[-300:], "fault": True,
                                "traceback": "Traceback" in err or None, "stderr_lines": len(lines)})
    print(f"{record}: exit {code} {elapsed:.1f} s after the signal: {lines}")
    assert code == 128 + signal.Signals[how].value, err[-3000:]
    assert len(lines) == 1, err[-3000:]
    assert lines[0] == (f"sensitivity sweep: stopped by {how}: the study keeps every finished trial and has queued "
                        f"the running ones again; to go on, run the same command: {rerun}"), lines
    others = err.replace(lines[0], "").lower()
    assert not [w for w in RAY_WORDS if w in others], err
    trials = study(tmp_path).get_trials()
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    interrupted = [t for t in trials if t.user_attrs.get("interrupted")]
    assert interrupted and all(t.state == TrialState.FAIL and t.user_attrs["orphaned"] for t in interrupted)
    reasons = [t.user_attrs["reason"] for t in interrupted]
    assert f"interrupted: the sweep was stopped ({how})" in reasons, reasons
    assert all(r.startswith("interrupted: the sweep was stopped (SIG") for r in reasons), reasons


def final(tmp_path) -> list:
    return [t for t in study(tmp_path).get_trials() if t.state in (TrialState.COMPLETE, TrialState.PRUNED,
                                                                      TrialState.FAIL)
            and not t.user_attrs.get("orphaned") and not t.user_attrs.get("surplus")]


def test_sigterm_then_ctrl_c_end_the_sweep_in_one_line_and_reruns_reach_exactly_n(tmp_path):
    for how in ("SIGTERM", "SIGINT"):
        proc, rerun = start(tmp_path)
        wait_until_running(proc, tmp_path)
        code, out, err, elapsed, started_ray = stop(proc, how)
        check_stopped(tmp_path, how, code, err, elapsed, rerun, f"a local sweep, {how}")
        assert not gone_within(started_ray), f"{how}: processes the driver started outlived it"
        assert out == ""
    proc, _ = start(tmp_path, "--allow-space-change", epochs=1)  # the rerun, its trials one epoch long
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and f"{N} final trials" in out, err[-3000:]
    assert len(final(tmp_path)) == N
    trials = study(tmp_path).get_trials()
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    proc, _ = start(tmp_path, "--allow-space-change", epochs=1)  # the second rerun runs nothing
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and len(study(tmp_path).get_trials()) == len(trials), err[-3000:]
    print(f"after two stops and two reruns: {len(final(tmp_path))} final trials of {len(trials)}, none running")


# ---------------------------------------------------------------------------------------------------------
# with --address: the cluster keeps running

RAY = str(Path(sys.executable).parent / "ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def head(ray_cluster_env):
    """A one-node Ray cluster (`ray start --head --block` in a session of its own); ended by process id."""
    env = ray_cluster_env
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="rayh-", dir="/tmp")
    proc = subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--include-dashboard", "false",
                             "--temp-dir", temp_dir, "--num-cpus", "2", "--object-store-memory", "80000000",
                             "--block"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while subprocess.run([RAY, "status", "--address", f"127.0.0.1:{port}"], env=env,
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, "the head did not start"
            time.sleep(1)
        yield f"127.0.0.1:{port}", proc
    finally:
        tree = [psutil.Process(proc.pid), *descendants(proc.pid)] if proc.poll() is None else []
        for p in tree:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(tree, timeout=10)


def test_sigterm_with_address_leaves_the_cluster_running(tmp_path, head):
    address, head_proc = head
    cluster = [psutil.Process(head_proc.pid), *descendants(head_proc.pid)]
    proc, rerun = start(tmp_path, "--address", address)
    wait_until_running(proc, tmp_path)
    code, out, err, elapsed, _ = stop(proc, "SIGTERM")
    check_stopped(tmp_path, "SIGTERM", code, err, elapsed, rerun, "a sweep on a cluster, SIGTERM")
    time.sleep(2)
    gone = [p.name() for p in cluster if not p.is_running() or p.status() == psutil.STATUS_ZOMBIE]
    assert not gone, f"the cluster lost {gone}"
    with socket.create_connection(("127.0.0.1", int(address.rpartition(":")[2])), timeout=3):
        pass
    proc, _ = start(tmp_path, "--address", address, "--allow-space-change", epochs=1)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0 and f"{N} final trials" in out, err[-3000:]
    assert len(final(tmp_path)) == N and not [t for t in study(tmp_path).get_trials() if t.state ==
                                                   TrialState.RUNNING]
