"""A storage's health during a sweep: every call on an RDB storage retried through a short outage, and why
the storage was declared lost.

Every call on an RDB storage is retried with backoff for `RETRY_WINDOW_S` seconds (a database server
restarting, a locked SQLite file): a short outage only delays the driver, and trials finishing during it
are written after. Beyond the window the error is raised. The heartbeat tries its calls once
(`single_attempt`) and counts its own failures; the heartbeat or a write that fails beyond the window
declares the storage lost (`mark_lost`), and the sweep stops; so does a file of the sweep that cannot be
written (`mark_write_fault`: a full disk under results/).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from sensitivity.studies.redaction import describe, reason

if TYPE_CHECKING:  # annotations only: tenacity is imported where a retry is made (`retried`)
    import tenacity

RETRY_WINDOW_S = 60.0
log = logging.getLogger(__name__)

# Lost during a sweep ----------------------------------------------------------------------------------

_LOST: list = []  # why this process's storage was declared lost during the sweep


def mark_lost(why: str) -> None:
    if not _LOST:
        _LOST.append(why)


def lost_reason():
    """Why the storage was declared lost in this process (the heartbeat or a write), or None."""
    return _LOST[0] if _LOST else None


def reset_lost() -> None:
    _LOST.clear()
    _WRITE_FAULT.clear()


_WRITE_FAULT: list = []  # why a file of the sweep under results/ (or Tune's folder) could not be written


def mark_write_fault(why: str) -> None:
    """A file the sweep writes beside the study (its trial log, Ray Tune's files) cannot be written (a full
    disk): a storage fault like the study's own, so the sweep takes no new trial (`mark_lost`), while the study,
    still sound, is told what it can; the driver ends with `why` in one line, exit 1. Once the storage was lost,
    a failed write is a consequence (the run stopping), not the fault: the loss stays the reason given."""
    if not _WRITE_FAULT and not _LOST:
        _WRITE_FAULT.append(why)
    mark_lost(why)


def write_fault():
    """Why a file of the sweep could not be written during it (`mark_write_fault`), or None."""
    return _WRITE_FAULT[0] if _WRITE_FAULT else None


# Retries -----------------------------------------------------------------------------------------------

_attempts = threading.local()  # per thread: whether storage calls get one attempt only


@contextlib.contextmanager
def single_attempt():
    """Calls on an RDB storage in this block (this thread) are tried once, without the retry window:
    for the heartbeat, which counts its own failures."""
    _attempts.once = True
    try:
        yield
    finally:
        _attempts.once = False


def _transient(exc: BaseException) -> bool:
    """A database that cannot be reached or is busy now: a connection error, a locked file, a write
    that failed with the server (Optuna wraps those in StorageInternalError)."""
    # lazy: optuna, sqlalchemy
    import optuna
    import sqlalchemy.exc
    return isinstance(exc, (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError,
                            sqlalchemy.exc.DisconnectionError, sqlalchemy.exc.PendingRollbackError,
                            optuna.exceptions.StorageInternalError)) \
        or (isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated)


def _retry_now(exc: BaseException) -> bool:
    return not getattr(_attempts, "once", False) and _transient(exc)


def _backoff(state: tenacity.RetryCallState) -> float:
    """0.5 s before the second attempt, doubling, at most 8 s."""
    return min(0.5 * 2 ** (state.attempt_number - 1), 8.0)


def _past_window(state: tenacity.RetryCallState) -> bool:
    """The next attempt would start past RETRY_WINDOW_S (read at each call: tests shorten it)."""
    return state.seconds_since_start + _backoff(state) > RETRY_WINDOW_S


def _warn_once(state: tenacity.RetryCallState) -> None:
    if state.attempt_number == 1:  # once per call
        storage = state.args[0]
        log.warning("storage %s: %s; retrying for up to %.0f s", describe(storage.url),
                    reason(state.outcome.exception()), RETRY_WINDOW_S)


def retried(method):
    """A method of a storage (with a `url`), retried with backoff through RETRY_WINDOW_S while its error is
    transient; raised at once in `single_attempt`, or when not transient."""
    import tenacity  # lazy: the sweep extra's; the legacy environment, which imports this module, lacks it

    return tenacity.retry(retry=tenacity.retry_if_exception(_retry_now), wait=_backoff, stop=_past_window,
                          before_sleep=_warn_once, reraise=True)(method)
