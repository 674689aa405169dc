"""The fuzz suite's bookkeeping, shared by its conftest and tests (a module of its own: `conftest` is a name
every test folder has): the outcomes per input kind, the assertion every case must pass, and the counts."""
from __future__ import annotations

import contextlib
import signal
from collections import defaultdict
from pathlib import Path

OUTCOMES: dict = defaultdict(list)  # input kind -> one dict per case


class Reached(RuntimeError):
    """A refused case got as far as something that runs or writes."""


class Hang(BaseException):
    """A case past its time (BaseException: the runner's `except Exception` does not take it for a traceback)."""


@contextlib.contextmanager
def hang_guard(seconds: float, name: str):
    """Raise Hang in the main thread once `seconds` pass (SIGALRM interrupts a blocking call or a runaway loop
    before it takes the machine's memory)."""
    def alarm(signum, frame):
        raise Hang(name)
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def hung(kind: str, name: str) -> dict:
    """Record a case that hung, as `classify` counts it."""
    outcome = {"name": name, "exit": None, "traceback": None, "stderr_lines": 0, "stderr": "", "created": [],
               "hang": True}
    OUTCOMES[kind].append(outcome)
    return outcome


def files_in(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def check(outcome: dict) -> None:
    """The suite's assertion: no traceback, one line on stderr, exit 2, nothing created."""
    assert outcome["traceback"] is None, outcome["traceback"]
    assert outcome["stderr_lines"] == 1, outcome["stderr"]
    assert outcome["exit"] == 2, outcome
    assert outcome["created"] == [], outcome["created"]


BY_OUTCOME = ("refused cleanly", "accepted", "ran", "tracebacks", "writes before refusal", "hangs", "not one line")


def classify(outcome: dict) -> str:
    """What a case did: hung (past its 10 s), reached Ray/a study/a trial (ran), raised (a traceback), exited 0
    (accepted), refused after creating something, refused in more or less than one line, or refused cleanly. A
    fault met by a running sweep (a signal, a full disk: `fault` set) is "refused cleanly" where it ended in its
    one line, whatever its exit (a full Tune folder met once the study held N ends with exit 0)."""
    if outcome.get("hang"):
        return "hangs"
    if outcome["traceback"] is not None:
        return "ran" if "Reached" in str(outcome["traceback"]) else "tracebacks"
    if outcome["exit"] == 0 and not outcome.get("fault"):
        return "accepted"
    if outcome["created"]:
        return "writes before refusal"
    return "refused cleanly" if outcome["stderr_lines"] == 1 else "not one line"


def summary() -> dict:
    table = {}
    for kind, outcomes in OUTCOMES.items():
        exits = defaultdict(int)
        for o in outcomes:
            exits[str(o["exit"])] += 1
        by = {name: sum(classify(o) == name for o in outcomes) for name in BY_OUTCOME}
        table[kind] = {"cases": len(outcomes), "exit_codes": dict(exits), "by_outcome": by,
                       "tracebacks": sum(o["traceback"] is not None for o in outcomes),
                       "not_one_line": sum(o["stderr_lines"] != 1 for o in outcomes),
                       "files_created": sum(len(o["created"]) for o in outcomes),
                       "writes_before_refusal": by["writes before refusal"], "hangs": by["hangs"]}
    return table
