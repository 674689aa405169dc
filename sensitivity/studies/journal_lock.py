"""The lock of a journal storage, with every wait bounded and named.

Optuna's writers of a journal FILE take its lock by making the symbolic link FILE.lock -> FILE, and remove it
after their append. Optuna's own lock (`JournalFileSymlinkLock`) waits on a link that exists: forever where it
leads nowhere (its grace period reads the mtime through the link, which a dangling link has not: "Retrying"
every 10 s), and, where it leads to the journal, until the journal has not changed for its grace period (30 s),
when it breaks the lock with warnings. `JournalLock` keeps Optuna's protocol and its grace period (the exact
reruns after a killed driver rely on it) and names every outcome in one line:

- a link to nothing, or to anything but the journal, or a lock that is no link: LockError at once (exit 1): no
  writer of this journal made it, and none will remove it;
- a link to the journal whose journal has not changed for GRACE_S: a writer killed while appending left it; it
  is broken, with one line on stderr instead of Optuna's warnings;
- a link to the journal that a live writer holds: waited for (a writer holds it for one append).

A link made by a writer in another folder with a relative path (Optuna links to the path it was given) is
taken as the journal's where it names the journal from the current folder.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

GRACE_S = 30.0  # Optuna's grace period (JournalFileSymlinkLock's default)
SUFFIX = ".lock"  # Optuna's LOCK_FILE_SUFFIX


class LockError(Exception):
    """A journal's lock that no writer of the journal holds and none will remove: one line naming it."""


def lock_path(journal) -> Path:
    return Path(str(journal) + SUFFIX)


def check_lock(journal) -> None:
    """LockError where the journal's lock exists and is not a link to the journal (a dangling link, a link to
    another file, a regular file or a folder); nothing otherwise (no lock, or one a writer of it holds)."""
    journal, lock = Path(journal), lock_path(journal)
    if not os.path.lexists(lock):
        return
    where = f"journal lock {lock}"
    hint = "no sweep on this journal made it; remove it (rm) and run again"
    if not lock.is_symlink():
        raise LockError(f"{where}: not a link to the journal, as Optuna's writers make it ({_kind(lock)}); {hint}")
    try:
        target = os.readlink(lock)
    except OSError:  # removed by its writer meanwhile: free
        return
    candidates = [lock.parent / target, Path(target)] if not os.path.isabs(target) else [Path(target)]
    existing = [c for c in candidates if c.exists()]
    if not existing:
        raise LockError(f"{where}: a link to {target!r}, which does not exist; {hint}")
    if not any(_same(c, journal) for c in existing):
        raise LockError(f"{where}: a link to {target!r}, not to the journal {journal}; {hint}")


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _kind(path: Path) -> str:
    return "a folder" if path.is_dir() else "a regular file" if path.is_file() else "not a link"


class _Lock:
    """Optuna's symlink lock protocol on `journal`, acquired as Optuna does, but refusing a lock no writer of the
    journal holds (LockError) and breaking a stale one with one line on stderr (`check_lock`, module doc)."""

    def __init__(self, journal: str, grace_s: float | None = None) -> None:
        self.journal = journal
        self.target = os.path.abspath(journal)  # Optuna links to the path as given: from another folder, nowhere
        self.lock = str(lock_path(journal))
        self.grace_s = GRACE_S if grace_s is None else grace_s

    def acquire(self) -> bool:
        sleep_s, seen, since = 0.001, None, time.monotonic()
        while True:
            try:
                os.symlink(self.target, self.lock)
                return True
            except FileExistsError:
                pass
            check_lock(self.journal)  # a link to the journal (from here or from the folder above), or gone
            try:
                mtime = os.stat(self.journal).st_mtime  # what Optuna reads through the link
            except OSError:
                mtime = None
            if mtime != seen:
                seen, since = mtime, time.monotonic()
            elif time.monotonic() - since > self.grace_s:
                self.release()
                print(f"sensitivity: journal lock {self.lock} was held for {self.grace_s:g} s without a write to the "
                      "journal (a writer killed while appending leaves it): broken", file=sys.stderr, flush=True)
                sleep_s = 0.001
                continue
            time.sleep(sleep_s)
            sleep_s = min(sleep_s * 2, 1.0)

    def release(self) -> None:
        try:
            os.unlink(self.lock)
        except FileNotFoundError:
            pass


_CLASS: list = []


def journal_lock(journal: str, grace_s: float | None = None):
    """The lock for Optuna's JournalFileBackend(journal, lock_obj=...): `_Lock`'s acquire and release over
    Optuna's public JournalFileSymlinkLock (whose protocol it keeps)."""
    # lazy: optuna
    from optuna.storages.journal import JournalFileSymlinkLock

    if not _CLASS:
        _CLASS.append(type("JournalLock", (_Lock, JournalFileSymlinkLock), {"__module__": __name__}))
    return _CLASS[0](journal, grace_s)
