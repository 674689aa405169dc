"""Where the tool writes: under results/ (or a folder the user names), in files named after studies.

A study name becomes part of file and folder names (kept weights, attack examples, Tune's run folder, the
default report and export paths), so it is checked once, wherever it enters: letters, digits, '.', '_' and
'-', starting with a letter or digit, at most 100 characters. `/etc/passwd`, `../../x`, a NUL or a
5,000-character name are refused in one line before anything is created.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path

RESULTS = Path("results")
MAX_NAME = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
ALLOWED = f"letters, digits, '.', '_' and '-', starting with a letter or digit, at most {MAX_NAME} characters"


def cache_root() -> Path:
    """Where downloads and caches live: $SENSITIVITY_CACHE_DIR, else ~/.cache/sensitivity."""
    return Path(os.environ.get("SENSITIVITY_CACHE_DIR") or Path.home() / ".cache" / "sensitivity").expanduser()


class UnsafeName(ValueError):
    """A name that cannot be part of a file name; the message is one line."""


def check_name(name: str, what: str = "study name") -> str:
    """`name` if it is safe in a file name, else UnsafeName naming what is allowed."""
    if not isinstance(name, str) or len(name) > MAX_NAME or not _NAME.fullmatch(name):
        shown = repr(name) if isinstance(name, str) and len(name) <= 60 else f"of {len(str(name))} characters"
        raise UnsafeName(f"{what} {shown}: allowed {ALLOWED}")
    return name


def under(root, name: str, suffix: str = "") -> Path:
    """root/NAME+suffix for a checked name; never outside root."""
    root = Path(root)
    path = root / (check_name(name) + suffix)
    if not path.resolve().is_relative_to(root.resolve()):
        raise UnsafeName(f"study name {name!r} leaves {root}")
    return path


def check_results_link() -> None:
    """ValueError where results/ is a symlink that leads nowhere or loops (every default path is under it)."""
    if RESULTS.is_symlink():
        try:
            RESULTS.resolve(strict=True)
        except (OSError, RuntimeError) as exc:  # RuntimeError: a loop (Python 3.11's pathlib)
            how = "loops" if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40 else "leads nowhere"
            raise ValueError(f"{RESULTS.absolute()} is a symlink to {os.readlink(RESULTS)!r} that {how}: runs write "
                             "their records under results/; fix or remove the link") from None


def check_results_folder() -> None:
    """ValueError unless results/ is a folder this process can write in, or can be made in the current one."""
    check_results_link()
    folder = RESULTS if RESULTS.exists() else Path(".")
    if RESULTS.exists() and not RESULTS.is_dir():
        raise ValueError(f"{RESULTS.resolve()} is not a folder: runs write their records under results/; move the "
                         "file, or run from another folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{folder.resolve()} is not writable: runs write their records under results/")


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket"
            if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")


class NotRegular(OSError):
    """A path the tool reads or writes that is not a regular file (a FIFO, a device, a folder)."""


def read_bytes_bounded(path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file `path` (the caller refuses more than `limit`). Opened
    without blocking and checked with fstat before any read: a FIFO, a device (/dev/zero) or a folder raises
    NotRegular at once instead of hanging or reading without end. OSError (FileNotFoundError, ...) otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(f"{_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_output(path, what: str) -> Path:
    """`path` if a file may be written there: absent, or a regular file; ValueError naming `what` for a FIFO
    (which would block the write), a device or a folder, and for a parent that is not a folder. Nothing is
    created."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{what} {str(path)!r}: {parent} is not a folder") from None
        return path
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{what} {str(path)!r}: {_kind(mode)}, not a regular file")
    return path


@contextlib.contextmanager
def atomic_write(path: Path):
    """Yield a binary file that replaces `path` only when the block ends without error.

    The temporary file has a unique name in the same folder, so concurrent writers never share it, and
    the usual permissions (the umask's), unlike tempfile's private ones.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
