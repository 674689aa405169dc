"""Ray Tune's files: where a run keeps them, what a failed trial keeps of them, and their removal.

The study is the record: no command of the tool reads Tune's files after a run, and the searcher restores nothing
from them (a killed driver's run is resumed from the study). So a run keeps only what Tune writes by itself: no
logger writes a trial's `params.json`, `params.pkl` or `result.json` (each epoch's result would be logged there);
each trial has an empty folder (its `error.txt` where it failed), and the run its experiment state (`tuner.pkl`,
`experiment_state-*.json`), a few kilobytes per trial, while it runs.

Where: under `--tune-dir` where given, else beside the storage's file (`FOLDER/ray-tune` for
`sqlite:///FOLDER/NAME.db` or `journal:FOLDER/NAME.log`, so that a study in a temporary folder leaves nothing in
the current folder), else, for a database server, `results/ray-tune` of the current folder. A run's files are
`ROOT/STUDY-DRIVER/` and Ray's messages of that run, `ROOT/STUDY-DRIVER.ray.log`.

When: once the study holds every final trial of the run (`remove_run`, after the driver's last check), the run's
folder and messages are removed, with those a dead driver of the same study left (a killed driver's), and ROOT
where nothing else is left in it. A run that ends with trials missing keeps them, for a look.

A trial whose Ray actor died or raised is told FAIL with the tail of what Ray wrote of it (`log_tail`: Tune's
`error.txt`, and the actor's stderr where it is on this machine) in its record, `ray_log`, before the folder goes.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

from sensitivity.studies.records import driver_alive, heartbeats
from sensitivity.studies.storage import default_url, folder_beside
from sensitivity.sweep.recovery import STALE_AFTER_S

FOLDER = "ray-tune"
TAIL_CHARS = 4000  # of each file a failed trial keeps
_FOLDERS: dict = {}  # Tune trial id -> (its folder on the driver, its actor's working folder), while it runs


def check_tune_dir(tune_dir: Optional[str]) -> None:
    """ValueError (one line) unless `tune_dir` is None, a folder this process can write in, or a path whose
    nearest existing folder it can write in (it is made when the run starts). Nothing is written."""
    if tune_dir is None:
        return
    allowed = "allowed: a folder this user can write in, or a new path inside one"
    path = Path(tune_dir).expanduser()
    if not str(tune_dir).strip() or "\0" in str(tune_dir):
        raise ValueError(f"--tune-dir {tune_dir!r}: not a path; {allowed}")
    if path.exists() and not path.is_dir():
        raise ValueError(f"--tune-dir {tune_dir}: a file, not a folder; {allowed}")
    existing = path
    while not existing.exists():
        if existing.is_symlink():
            raise ValueError(f"--tune-dir {tune_dir}: {existing} is a link to nothing; {allowed}")
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"--tune-dir {tune_dir}: {existing} is a file, not a folder; {allowed}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--tune-dir {tune_dir}: {existing.absolute()} is not writable; {allowed}")


def tune_root(storage_url: Optional[str], tune_dir: Optional[str] = None) -> Path:
    """The folder a run's Tune files go under (see the module), absolute; not made here."""
    if tune_dir:
        return Path(tune_dir).expanduser().absolute()
    return folder_beside(storage_url or default_url(), FOLDER)


def run_name(study_name: str, driver_id: str) -> str:
    return f"{study_name}-{driver_id}"


def note_folders(trial_id: str, local: Optional[str], working: Optional[str]) -> None:
    """A trial has started (`dispatch.TrialFolders`): its folder on the driver and its actor's working folder."""
    _FOLDERS[trial_id] = (local, working)


def log_tail(trial_id: str) -> str:
    """What Ray wrote of a failed trial, its last TAIL_CHARS characters of each file: Tune's `error.txt` (the
    actor's error: its death, its exit, the exception it raised) and the actor's stderr and stdout where its node
    is this machine; "" where there is none. Forgets the trial's folders."""
    local, working = _FOLDERS.pop(trial_id, (None, None))
    parts = []
    for folder, name in ((local, "error.txt"), (working, "stderr"), (working, "stdout")):
        if not folder:
            continue
        try:
            with open(Path(folder) / name, "rb") as handle:
                handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL_CHARS))
                text = handle.read().decode("utf-8", errors="backslashreplace")
        except OSError:  # none written, or on another node
            continue
        text = "\n".join(line for line in text.splitlines()  # not Ray's marker of the actor's name
                         if not line.startswith(":actor_name:")).strip()
        if text:
            parts.append(f"[{name}] {text}")
    return "\n".join(parts)


def forget(trial_id: str) -> None:
    _FOLDERS.pop(trial_id, None)


def remove_run(study, driver_id: str, root: Path) -> list:
    """Remove this run's Tune files, those of the study's runs whose driver is dead, and `root` where it is left
    empty; the paths removed. Called once the study holds every final trial of the run."""
    alive = {d for d, b in heartbeats(study).items() if d != driver_id and driver_alive(b, STALE_AFTER_S)}
    removed = []
    prefix = f"{study.study_name}-"
    try:
        entries = list(Path(root).iterdir())
    except OSError:  # no Tune files at all
        return removed
    for entry in entries:
        name = entry.name.removesuffix(".ray.log")
        other = name[len(prefix):] if name.startswith(prefix) else None
        if not other or not other.isalnum() or other in alive:
            continue  # another study's, or a live driver's
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    try:
        Path(root).rmdir()  # only where nothing else is left in it
    except OSError:
        pass
    return removed
