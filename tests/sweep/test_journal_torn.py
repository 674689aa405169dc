"""A journal (and a trial log) whose last line a full disk or a crash tore: the torn bytes are set aside in a
copy named in one line, and reruns reach exactly N final trials. Real sweeps (digits, the MLP, 1 epoch) on
`journal:` storages: one with its tail cut mid-line, one on a real 8 MiB tmpfs filled during a sweep (skipped
where mounting is refused). Also: a storage's kind comes from its scheme alone."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks
from sensitivity.studies.storage import StorageError, _file_of, open_storage
from test_sweep_faults import write

needs_torch = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
COPY = re.compile(r"set aside in (\S+\.torn-\d{8}T\d{6}(?:-\d+)?)")


def sweep(tmp_path, url, n, timeout=600, *more):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", str(write(tmp_path)), "--trials", str(n),
                           "--storage", url, "--no-progress", *more], cwd=tmp_path, capture_output=True, text=True,
                          timeout=timeout)


def final(url):
    trials = optuna.load_study(study_name="f", storage=open_storage(url, must_exist=True)).get_trials()
    done = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
            and not t.user_attrs.get("orphaned") and not t.user_attrs.get("surplus")]
    return done, [t for t in trials if t.state == TrialState.RUNNING]


def tear(path: Path) -> bytes:
    """Cut the last record in the middle, as a write stopped by a full disk leaves it; the bytes cut."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    cut = start + (len(data) - start) // 2
    with open(path, "r+b") as f:
        f.truncate(cut)
    return data[start:cut]


@needs_torch
def test_a_torn_journal_and_trial_log_are_set_aside_and_reruns_reach_exactly_n(tmp_path):
    journal = tmp_path / "s.journal"
    url = f"journal:{journal}"
    proc = sweep(tmp_path, url, 2)
    assert proc.returncode == 0 and "2 final trials" in proc.stdout, proc.stderr[-3000:]
    log = tmp_path / "results" / "trial-logs" / "f.jsonl"
    torn_journal, torn_log = tear(journal), tear(log)
    print(f"torn: {len(torn_journal)} bytes of the journal's last record, {len(torn_log)} of the log's")

    proc = sweep(tmp_path, url, 4)  # before: "cannot be opened: Expecting ':' delimiter" once it appended
    assert proc.returncode == 0 and "4 final trials" in proc.stdout, proc.stderr[-3000:]
    named = COPY.findall(proc.stderr)
    print("first rerun named:", named)
    assert len(named) == 2 and "Traceback" not in proc.stderr
    copies = {Path(p).name.split(".torn-")[0]: tmp_path / p for p in named}  # the log's is relative
    assert copies["s.journal"].read_bytes() == torn_journal and copies["f.jsonl"].read_bytes() == torn_log
    assert copies["s.journal"].parent == journal.parent
    assert journal.read_bytes().endswith(b"\n") and log.read_bytes().endswith(b"\n")
    done, running = final(url)
    assert len(done) == 4 and not running

    proc = sweep(tmp_path, url, 4)  # the second rerun: nothing torn, nothing to do
    assert proc.returncode == 0 and "4 final trials" in proc.stdout and not COPY.search(proc.stderr), proc.stderr
    done, running = final(url)
    assert len(done) == 4 and not running
    print(f"reruns: {len(done)} final, {len(running)} running")

    rebuilt = subprocess.run([sys.executable, "-m", "sensitivity.cli", "studies", "rebuild", str(log), "--storage",
                              f"sqlite:///{tmp_path}/rebuilt.db"], cwd=tmp_path, capture_output=True, text=True,
                             timeout=300)
    # the journal's last record was the first run's `last_run` attribute, so trial 1 stayed final in the study
    # while its trial-log line was torn and set aside: the log restores the 3 trials whose lines are whole
    assert rebuilt.returncode == 0 and "3 trials restored" in rebuilt.stdout, rebuilt.stderr


def test_rebuild_sets_a_torn_trial_log_tail_aside_and_restores_every_whole_trial(tmp_path, monkeypatch):
    from sensitivity.sweep.trial_log import log_study, log_trial, rebuild
    monkeypatch.chdir(tmp_path)
    study = optuna.create_study(study_name="r", storage=open_storage(f"sqlite:///{tmp_path}/a.db"))
    path = log_study(study)
    for i in range(3):
        trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
        log_trial(path, trial, TrialState.COMPLETE, [float(i)], {}, {"config_id": f"c{i}", "seed": 0})
    cut = tear(path)
    assert rebuild(path, f"sqlite:///{tmp_path}/b.db") == ("r", 2)
    (copy,) = tmp_path.glob("results/trial-logs/r.jsonl.torn-*")
    assert copy.read_bytes() == cut and path.read_bytes().endswith(b"\n")


def test_a_journal_torn_before_its_first_newline_starts_anew(tmp_path, capsys):
    journal = tmp_path / "j.journal"
    journal.write_bytes(b'{"op_code":0,"worker_id":"ab')
    optuna.create_study(study_name="f", storage=open_storage(f"journal:{journal}"))
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "set aside in" in err
    assert len(optuna.get_all_study_names(open_storage(f"journal:{journal}"))) == 1


def test_a_reader_leaves_a_torn_journal_as_it_is(tmp_path):
    journal = tmp_path / "j.journal"
    optuna.create_study(study_name="f", storage=open_storage(f"journal:{journal}")).optimize(
        lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    cut = tear(journal)
    before = journal.read_bytes()
    assert optuna.get_all_study_names(open_storage(f"journal:{journal}", must_exist=True)) == ["f"]
    assert journal.read_bytes() == before and not list(tmp_path.glob("*.torn-*")) and cut


@pytest.mark.parametrize("url, file, kind", [
    ("sqlite:///x.log", "x.log", "sqlite"), ("sqlite:///x.journal", "x.journal", "sqlite"),
    ("journal:x.db", "x.db", "journal"), ("journal:x.log", "x.log", "journal"),
    ("postgresql://127.0.0.1:1/db.log", None, "server"), ("postgresql://h/db.journal", None, "server"),
])
def test_a_storage_kind_comes_from_its_scheme_never_its_suffix(tmp_path, monkeypatch, url, file, kind):
    monkeypatch.chdir(tmp_path)
    assert _file_of(url) == (Path(file) if file else None)
    if kind == "server":
        if "127.0.0.1" in url:
            with pytest.raises(StorageError, match="cannot be opened"):
                open_storage(url)
        assert list(tmp_path.iterdir()) == []
        return
    optuna.create_study(study_name="f", storage=open_storage(url))
    head = (tmp_path / file).read_bytes()[:16]
    assert head.startswith(b"SQLite format 3") if kind == "sqlite" else head.startswith(b'{"op_code":')


@pytest.fixture
def small_tmpfs(tmp_path):
    """An 8 MiB tmpfs of this test's own, or a skip where mounting is refused (not root, a container)."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        pytest.skip(f"mounting a tmpfs is refused here: {proc.stderr.strip()[:200]}")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path) -> Path:
    """A file taking every free byte of the file system."""
    filler = folder / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


@needs_torch
def test_a_full_tmpfs_tears_the_journal_and_reruns_reach_exactly_n(tmp_path, small_tmpfs):
    journal = small_tmpfs / "s.journal"
    url = f"journal:{journal}"
    # Ray Tune's files beside the journal would fill the disk before the journal tears: they go elsewhere here
    # (a full Tune folder is tests/fuzz/test_fuzz_full_results.py's)
    outside = ("--tune-dir", str(tmp_path / "tune"))
    proc = sweep(tmp_path, url, 1, 600, *outside)
    assert proc.returncode == 0 and "1 final trials" in proc.stdout, proc.stderr[-3000:]
    filler = fill(small_tmpfs)
    full = sweep(tmp_path, url, 4, 600, *outside)  # writes until the disk refuses one mid-record
    print(f"on the full disk: exit {full.returncode}; {full.stderr.strip().splitlines()[-1:]}")
    (tmp_path / "full-disk.stderr").write_text(full.stderr)
    assert full.returncode == 1 and "Traceback" not in full.stderr, full.stderr[-3000:]
    assert "No space left on device" in full.stderr and "studies rebuild" in full.stderr
    assert not journal.read_bytes().endswith(b"\n"), "the full disk left no torn line"
    filler.unlink()

    first = sweep(tmp_path, url, 4, 600, *outside)
    assert first.returncode == 0 and "4 final trials" in first.stdout, first.stderr[-3000:]
    (copy,) = COPY.findall(first.stderr)
    print("first rerun named:", copy)
    assert Path(copy).exists() and Path(copy).parent == small_tmpfs
    second = sweep(tmp_path, url, 4, 600, *outside)
    assert second.returncode == 0 and "4 final trials" in second.stdout and not COPY.search(second.stderr)
    done, running = final(url)
    assert len(done) == 4 and not running
    print(f"after two reruns: {len(done)} final, {len(running)} running")
