"""Issue 44: a full disk where a sweep writes beside its study is a storage fault like any other. Real sweeps
(digits, the MLP, two trials at once), the study's SQLite file on the ordinary disk:

- `results/` on an 8 MiB tmpfs, filled once two trials are final: the trial whose log line does not fit is still
  told to the study, no new trial starts, and the driver ends with one line naming the trial log (exit 1, no
  traceback; before: 244 lines, 11 tracebacks, every trial left RUNNING and run again);
- Ray Tune's folder (`--tune-dir`) on an 8 MiB tmpfs, filled while the first trials run: Tune's failed writes
  (its experiment state's sync; a traceback each, attached or written into the message) become the same one
  line, exit 1. A fault Tune meets only once the study holds N (it syncs every 5 minutes and when its run ends) is
  that line with exit 0.

Each time the study holds no trial twice, the trials still running are left to the orphan rule, and a rerun after
space is freed reaches exactly N without running again a trial already told. Skipped where mounting is refused."""
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from fuzz_runner import OUTCOMES
from optuna.trial import TrialState

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
N = 8
SPACE = """study: s
dataset: digits
model: mlp
frameworks: [torch]
parameters:
  lr: {type: float, low: 0.01, high: 0.3, log: true}
fixed: {epochs: 30, optimizer: momentum, momentum: 0.9}
objectives: [{metric: val_accuracy, direction: maximize}]
"""
OPTUNA_INFO = ("A new study created in RDB with name: s", "Using an existing study with `study_name='s'`")


def mount_tmpfs(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"mounting a tmpfs is refused here: {proc.stderr.strip()[:200]}")
    return where


@pytest.fixture
def mounts():
    made = []
    yield lambda where: made.append(mount_tmpfs(where)) or where
    for where in made:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> Path:
    """A file taking every free byte of the file system."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:  # unbuffered: no write left for close() to fail on
        try:
            while f.write(b"\0" * 65536):
                pass
        except OSError:
            pass
    return filler


def start(work: Path, *extra):
    (work / "s.yaml").write_text(SPACE)
    argv = ["sweep", "s.yaml", "--trials", str(N), "--parallel", "2", "--no-progress", "--storage",
            f"sqlite:///{work.parent}/db/s.db", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("SENSITIVITY_STORAGE", "RAY_ADDRESS")}
    return subprocess.Popen([sys.executable, "-m", "sensitivity.cli", *argv], cwd=work, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def count(work: Path, state: str) -> int:
    try:
        with sqlite3.connect(f"file:{work.parent}/db/s.db?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT count(*) FROM trials WHERE state = ?", (state,)).fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_for(proc, work: Path, state: str, least: int, timeout=300):
    deadline = time.monotonic() + timeout
    while count(work, state) < least:
        assert proc.poll() is None, f"exit {proc.returncode}: {proc.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, f"never {least} {state}"
        time.sleep(0.3)


def trials(work: Path) -> list:
    return optuna.load_study(study_name="s", storage=f"sqlite:///{work.parent}/db/s.db").get_trials()


def final(ts) -> list:
    return [t for t in ts if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
            and not t.user_attrs.get("orphaned") and not t.user_attrs.get("surplus")]


def lines(err: str) -> list:
    return [line for line in err.splitlines() if not (line.startswith("[I ") and any(m in line for m in OPTUNA_INFO))]


def check_fault_and_rerun(work: Path, proc, filler: Path, wanted: str, name: str, *extra) -> None:
    out, err = proc.communicate(timeout=600)
    shown = lines(err)
    OUTCOMES["full disk"].append({"name": name, "exit": proc.returncode, "created": [], "fault": True,
                                  "stderr": err[-300:],
                                  "traceback": "Traceback" in err or None, "stderr_lines": len(shown)})
    print(f"{name}: exit {proc.returncode}: {shown}")
    assert "Traceback" not in err and len(shown) == 1 and wanted in shown[0], err[-3000:]
    assert "No space left on device" in shown[0]
    before = trials(work)
    told = final(before)
    if proc.returncode == 0:  # the study held N before the fault mattered: said, and nothing to do
        assert len(told) == N
        return
    assert proc.returncode == 1 and f"has {len(told)} final trials of {N}" in shown[0], shown
    running = [t for t in before if t.state == TrialState.RUNNING]
    print(f"{name}: {len(told)} trials told, {len(running)} left RUNNING to the orphan rule")
    filler.unlink()
    rerun = start(work, *extra)
    out, err = rerun.communicate(timeout=900)
    assert rerun.returncode == 0 and f"{N} final trials" in out, err[-3000:]
    after = trials(work)
    assert len(final(after)) == N and not [t for t in after if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    told_numbers = {t.number for t in told}
    assert {t.number for t in final(after)} >= told_numbers  # what was told stays, once
    again = [t for t in after if t.user_attrs.get("retry_of") in told_numbers]
    assert not again, f"trials already told ran again: {[t.user_attrs['retry_of'] for t in again]}"
    runs = [(t.user_attrs.get("config_id"), t.user_attrs.get("seed")) for t in final(after)]
    assert len(runs) == len(set(runs)), "a configuration and seed final twice"
    print(f"{name}: the rerun reached {N} final trials, none of the {len(told)} told run again")


def test_a_full_results_folder_tells_the_study_and_ends_in_one_line(tmp_path, mounts):
    work = tmp_path / "work"
    (tmp_path / "db").mkdir()
    mounts(work / "results")
    proc = start(work)
    wait_for(proc, work, "COMPLETE", 2)
    filler = fill(work / "results")
    check_fault_and_rerun(work, proc, filler, "trial log results/trial-logs/s.jsonl cannot be written",
                          "results/ full: the trial log")


def test_a_full_tune_folder_is_one_line_too(tmp_path, mounts):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "db").mkdir()
    tune = mounts(tmp_path / "tune")
    proc = start(work, "--tune-dir", str(tune))
    wait_for(proc, work, "RUNNING", 1)
    filler = fill(tune)
    check_fault_and_rerun(work, proc, filler, "Ray Tune's folder", "--tune-dir full", "--tune-dir", str(tune))
