"""SIGTERM and SIGINT end a sweep in the tool's words.

`kill PID` (what systemd and schedulers send) met Ray's C++ failure handler, which printed a 6-line dump and
exited 1; Ctrl-C met Tune's handler, which printed "Resume experiment with: Tuner.restore(...)", the wrong advice
here. While a sweep runs (`signals_end_the_sweep`), either signal raises `Stopped` in the main thread, wherever it
is: the driver takes no new trial, the searcher tells the study its live trials as interrupted and queues them
again (`tuning.run_tune`), the Ray this driver started is stopped (a joined cluster keeps running: only this
driver's trials end), and the command line prints one line with the command to run again, exit 128 + the signal
(143 for SIGTERM, 130 for SIGINT; `cli.main` prints it where a KeyboardInterrupt arrives and `stopped_by` names a
signal). A second signal while the driver ends ends it at once, with the same line (the
reaper then ends the local Ray, as after a kill).

Ray installs its own SIGTERM handler when it starts and Tune its SIGINT handler when `fit()` starts: `rearm()`
after Ray's start puts this one back, and Tune's is switched off (TUNE_DISABLE_SIGINT_HANDLER).
"""
from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading

SIGNALS = (signal.SIGTERM, signal.SIGINT)
_state: dict = {}  # while a sweep runs: the handlers to restore, and the signal being handled
_command_line: list = []  # the arguments of the command running (cli.main sets them)
_stopped: list = [None]  # the signal that ended a sweep of this process


class Stopped(KeyboardInterrupt):
    """The sweep was ended by a signal. A KeyboardInterrupt: no `except Exception` on the way out takes it for an
    error of its own (Tune's included), and Ray's wait, which polls signals from C, turns any other exception
    into a SystemError; it raises a KeyboardInterrupt of its own instead, so `stopped_by` keeps the signal."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.code = 128 + signum


def set_command_line(argv: list) -> None:
    """The arguments of the command being run (after `sensitivity`), for the line that says how to go on."""
    _command_line[:] = list(argv)
    _stopped[0] = None


def line(name: str) -> str:
    """The one line a sweep stopped by the signal `name` prints."""
    command = _command_line[0] if _command_line else "sweep"
    rerun = "sensitivity " + shlex.join(_command_line) if _command_line else "the same command"
    return (f"sensitivity {command}: stopped by {name}: the study keeps every finished trial and has queued the "
            f"running ones again; to go on, run the same command: {rerun}")


def _handler(signum, frame) -> None:
    if _state.get("stopping") is not None:  # a second signal: end now, with the line the first would print
        print(line(signal.Signals(signum).name), file=sys.__stderr__, flush=True)
        os._exit(128 + signum)
    _state["stopping"] = _stopped[0] = signum
    raise Stopped(signum)


def stopped_by():
    """The name of the signal that ended the last sweep of this process (SIGTERM, SIGINT), else None."""
    return signal.Signals(_stopped[0]).name if _stopped[0] else None


def rearm() -> None:
    """Put this module's handlers back (after Ray's start, which installs its own for SIGTERM)."""
    if "previous" in _state:
        for signum in SIGNALS:
            signal.signal(signum, _handler)


@contextlib.contextmanager
def signals_end_the_sweep():
    """While the block runs, SIGTERM and SIGINT raise Stopped (see the module doc). Nested use keeps the outer
    one's handlers; outside the main thread (where no handler can be set) it does nothing."""
    if "previous" in _state or threading.current_thread() is not threading.main_thread():
        yield
        return
    os.environ.setdefault("TUNE_DISABLE_SIGINT_HANDLER", "1")  # Tune's would print Tuner.restore advice
    _state.update(previous={s: signal.getsignal(s) for s in SIGNALS}, stopping=None)
    rearm()
    try:
        yield
    finally:
        for signum, handler in _state.pop("previous").items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        _state.clear()
