"""Files of one JSON record a line (Optuna's journal, the trial logs), read within bounds and mended when a
full disk or a crash cut their last line.

Every such file must be a regular file: a FIFO, a device (`/dev/zero`) or a folder is refused before it is
opened for reading, and it is opened without blocking and checked again, so nothing waits on a writer or reads
without end. A line may be at most MAX_LINE bytes. A writer appends whole lines, each ending with a newline,
so a last line without one is torn: the record was never complete, and nothing committed is in it.
`set_aside` copies those bytes beside the file (FILE.torn-TIMESTAMP), truncates the file to the records before
them and says so in one line on stderr; the next append then starts on a line of its own.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path

from sensitivity.studies.journal_lock import LockError, journal_lock

MAX_LINE = 16 * 2**20  # bytes in one record's line (a trial with 10,000 epochs' curves takes well under 1 MiB)
_CHUNK = 2**16


class RecordFileError(Exception):
    """A file that cannot be read as records; the message is one line naming it."""


def _mib(n: int) -> str:
    return f"{n / 2**20:g} MiB"


def open_regular(path, what: str, max_bytes: int | None = None) -> int:
    """A read-only descriptor on `path`, a regular file of at most `max_bytes`; RecordFileError otherwise.
    Checked before opening (no FIFO is opened) and after (the path may have been swapped in between)."""
    path = Path(path)
    try:
        before = os.stat(path)
    except OSError as exc:
        raise RecordFileError(f"{what}: cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(before.st_mode):
        raise RecordFileError(f"{what}: not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise RecordFileError(f"{what}: cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise RecordFileError(f"{what}: not a regular file")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise RecordFileError(f"{what}: {info.st_size:,} bytes, more than the {max_bytes:,} allowed")
    return fd


def lines(fd: int, what: str):
    """(number, line as bytes) for each line of the file open at `fd`, from its start; a line longer than
    MAX_LINE is a RecordFileError."""
    with os.fdopen(os.dup(fd), "rb") as f:
        f.seek(0)
        for number in range(1, sys.maxsize):
            line = f.readline(MAX_LINE + 1)
            if not line:
                return
            if len(line) > MAX_LINE:
                raise RecordFileError(f"{what}: line {number} is longer than {_mib(MAX_LINE)}")
            yield number, line


def torn_start(fd: int, what: str):
    """Where the torn last line of the file starts (a byte offset), or None when the file is empty or ends with
    a newline. Reads back from the end, at most MAX_LINE bytes."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return None
    end = size
    while end > 0 and size - end < MAX_LINE:
        start = max(0, end - _CHUNK)
        at = os.pread(fd, end - start, start).rfind(b"\n")
        if at >= 0:
            return start + at + 1
        end = start
    if end > 0:
        raise RecordFileError(f"{what}: its last line is longer than {_mib(MAX_LINE)}")
    return 0


def torn_bytes(fd: int, start: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size - start, start)


def looks_like(tail: bytes, opening: bytes) -> bool:
    """The torn bytes are the start of a record that opens with `opening` (or all of it there is)."""
    return tail.startswith(opening) or opening.startswith(tail)


def set_aside(path, what: str, opening: bytes) -> Path | None:
    """Mend a torn last line of the file at `path` (the caller holds the writers' lock): copy it to
    PATH.torn-TIMESTAMP, truncate the file before it, print one line; the copy's path, or None when the file
    ends whole. RecordFileError when the torn bytes are no record's start (not such a file) or the copy
    cannot be written (nothing is truncated then)."""
    path = Path(path)
    fd = open_regular(path, what)
    try:
        start = torn_start(fd, what)
        if start is None:
            return None
        tail = torn_bytes(fd, start)
        if not looks_like(tail, opening):
            raise RecordFileError(f"{what}: its last line is no record of such a file; name another file")
        copy = _write_copy(path, tail, what)
        try:
            with open(path, "r+b") as f:
                f.truncate(start)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise RecordFileError(f"{what}: cannot be truncated before its torn last line ({exc.strerror}); "
                                  f"it is copied to {copy}") from None
    finally:
        os.close(fd)
    print(f"{what}: its last line was torn (a full disk or a crash cut it); its {len(tail)} bytes are set aside in "
          f"{copy} and the file resumes from the {start} bytes of whole records before them", file=sys.stderr)
    sys.stderr.flush()
    return copy


def _write_copy(path: Path, tail: bytes, what: str) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    for n in range(100):
        copy = path.with_name(f"{path.name}.torn-{stamp}" + (f"-{n}" if n else ""))
        try:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise RecordFileError(f"{what}: its last line is torn and cannot be set aside in {copy} "
                                  f"({exc.strerror}); free space there and rerun") from None
        try:
            with os.fdopen(fd, "wb") as f:  # closes fd; a short write is finished or raises
                f.write(tail)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            copy.unlink(missing_ok=True)
            raise RecordFileError(f"{what}: its last line is torn and cannot be set aside in {copy} "
                                  f"({exc.strerror}); free space there and rerun") from None
        return copy
    raise RecordFileError(f"{what}: its last line is torn and 100 copies {path.name}.torn-{stamp}* exist already")


# Optuna's journal ------------------------------------------------------------------------------------------

JOURNAL_OPENING = b'{"op_code":'  # how Optuna's journal writes each record


def check_journal(path, what: str) -> None:
    """An existing journal file must be Optuna's: its first line a journal record, and a torn last line the
    start of one. Read-only, bounded by MAX_LINE; RecordFileError otherwise."""
    fd = open_regular(path, what)
    try:
        first = next(lines(fd, what), (1, b""))[1]
        start = torn_start(fd, what)
        tail = torn_bytes(fd, start) if start is not None else b""
    finally:
        os.close(fd)
    if not first:
        return
    if first.endswith(b"\n"):
        try:
            record = json.loads(first)
            sound = isinstance(record, dict) and isinstance(record.get("op_code"), int) and "worker_id" in record
        except ValueError:
            sound = False
    else:  # the journal's one line, torn
        sound = looks_like(first, JOURNAL_OPENING)
    if not sound or not looks_like(tail, JOURNAL_OPENING):
        raise RecordFileError(f"{what}: not an Optuna journal (its {'first' if not sound else 'last'} line is no "
                              "journal record); name another file")


def mend_journal(path, what: str) -> None:
    """Set a journal's torn last record aside (`set_aside`) before a writer appends to it, under the lock
    Optuna's writers take, so that a record another driver is writing is never taken for torn."""
    path = Path(path)
    if not path.exists():
        return
    fd = open_regular(path, what)
    try:
        whole = torn_start(fd, what) is None
    finally:
        os.close(fd)
    if whole:  # the usual case: no lock taken (a killed driver's stale lock would cost its 30 s grace)
        return
    lock = journal_lock(str(path))
    try:
        lock.acquire()
    except LockError as exc:
        raise RecordFileError(f"{what}: {exc}") from None
    except OSError as exc:
        raise RecordFileError(f"{what}: its lock {path}.lock cannot be taken ({exc.strerror})") from None
    try:
        set_aside(path, what, JOURNAL_OPENING)
    finally:
        lock.release()
