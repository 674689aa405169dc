"""A trial's Ray actor killed on a live node (a local Ray): the trial is a final FAIL judged at once, not after
the node-loss check's 30 s wait; stderr says so in one line of the tool's (no Ray traceback, no "Trials did
not complete"), and stdout holds the tool's summary alone (Ray's "(raylet) A worker died ..." goes to a file
beside the study while the run lasts); the trial's record keeps the tail of Ray's log of it, and Tune's files go
once the study holds the trial."""
import subprocess
import sys
import time

import optuna
import psutil
import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
RAY_NOTICES = ("Token authentication is enabled",)  # Ray's, printed at ray.init before any trial
SPACE = """study: a
dataset: digits
model: mlp
frameworks: [torch]
parameters: {lr: {type: float, low: 0.01, high: 0.1, log: true}}
fixed: {epochs: 300}
objectives: [{metric: val_accuracy, direction: maximize}]
"""


def test_a_killed_actor_is_one_line_judged_at_once_and_no_ray_text(tmp_path):
    (tmp_path / "s.yaml").write_text(SPACE)
    out, err = (tmp_path / "out.txt").open("w"), (tmp_path / "err.txt").open("w")
    driver = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", "sweep", "s.yaml", "--trials", "1",
                               "--no-progress"], cwd=tmp_path, stdout=out, stderr=err)
    storage = f"sqlite:///{tmp_path}/results/optuna.db"
    deadline, killed = time.monotonic() + 300, None
    while killed is None and time.monotonic() < deadline and driver.poll() is None:
        try:
            trials = optuna.load_study(study_name="a", storage=storage).trials
        except Exception:  # the driver has not made the study yet
            trials = []
        if trials and trials[0].intermediate_values:  # the trial runs: kill its actor
            for child in psutil.Process(driver.pid).children(recursive=True):
                try:
                    if "ImplicitFunc" in child.name() or "ImplicitFunc" in " ".join(child.cmdline()):
                        child.kill()
                        killed = time.monotonic()
                except psutil.Error:
                    pass
        time.sleep(0.1)
    assert killed is not None, (tmp_path / "err.txt").read_text()[-3000:]
    judged = None
    while judged is None and time.monotonic() - killed < 60:
        if optuna.load_study(study_name="a", storage=storage).trials[0].state.name != "RUNNING":
            judged = time.monotonic() - killed
        time.sleep(0.1)
    assert driver.wait(timeout=300) == 0, (tmp_path / "err.txt").read_text()[-3000:]
    (trial,) = optuna.load_study(study_name="a", storage=storage).trials
    stdout, stderr = (tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text()
    print(f"\nactor killed: judged {judged:.1f} s after the kill; stderr {stderr.count(chr(10))} lines")
    assert judged is not None and judged < 10, judged  # the node-loss check waited 30 s
    assert trial.state.name == "FAIL" and "which is alive" in trial.user_attrs["reason"]
    assert not trial.user_attrs.get("orphaned")  # the node lives: the trial's own failure, final
    assert stdout.splitlines() == [f"study a in {storage.replace('sqlite:///', 'sqlite:///')}: 1 final trials"], stdout
    lines = [line for line in stderr.splitlines() if not line.startswith(RAY_NOTICES) and "A new study" not in line]
    assert len(lines) == 1 and lines[0].startswith("trial 0 failed: its Ray actor died"), stderr
    assert "Traceback" not in stderr and "Trials did not complete" not in stderr
    assert trial.user_attrs["ray_log"].startswith("[error.txt] Failure # 1")  # Tune's note of the actor's death
    assert "The actor died unexpectedly" in trial.user_attrs["ray_log"]
    assert not (tmp_path / "results" / "ray-tune").exists()
