"""Issue 33's input edges, in-process: a FIFO or a device where a file is read or written, an unknown
output ending, control and bidirectional characters in names. Each is refused in one line, exit 2, nothing
created, within 10 s (a case past 10 s counts as a hang: SIGALRM interrupts the blocking open or read)."""
import signal
import unicodedata
from pathlib import Path

import pytest
from fuzz_runner import OUTCOMES, check
from fuzz_cases import edge_cases, environment_cases

LIMIT_S = 10
CASES = edge_cases()
ENVIRONMENT = environment_cases()


class Hang(BaseException):
    """A case past LIMIT_S (BaseException: the runner's `except Exception` does not take it for a traceback)."""


def run_within(refused, env, kind, name, argv, files, setup):
    def alarm(signum, frame):
        raise Hang(name)
    setup(Path.cwd(), env)
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S)
    try:
        return refused(kind, name, argv, files)
    except Hang:
        outcome = {"name": name, "exit": None, "traceback": None, "stderr_lines": 0, "stderr": "", "created": [],
                   "hang": True}
        OUTCOMES[kind].append(outcome)
        return outcome
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_case_names_are_unique():
    assert len({c[0] for c in CASES + ENVIRONMENT}) == len(CASES + ENVIRONMENT)


@pytest.mark.parametrize("name,argv,files,setup", CASES, ids=[c[0] for c in CASES])
def test_refused_cleanly_within_10_s(refused, monkeypatch, name, argv, files, setup):
    outcome = run_within(refused, monkeypatch, "edge", name, argv, files, setup)
    assert not outcome.get("hang"), f"{name}: past {LIMIT_S} s"
    check(outcome)
    raw = [c for c in outcome["stderr"].rstrip("\n") if unicodedata.category(c) in ("Cc", "Cf", "Cs")]
    assert not raw, f"{name}: raw control characters on stderr: {raw!r}"


@pytest.mark.parametrize("name,argv,files,setup", ENVIRONMENT, ids=[c[0] for c in ENVIRONMENT])
def test_an_environment_fault_is_one_line_exit_1_or_2(refused, monkeypatch, name, argv, files, setup):
    outcome = run_within(refused, monkeypatch, "environment", name, argv, files, setup)
    assert not outcome.get("hang"), f"{name}: past {LIMIT_S} s"
    assert outcome["traceback"] is None, outcome["traceback"]
    assert outcome["stderr_lines"] == 1 and outcome["exit"] in (1, 2), outcome
    assert outcome["created"] == [], outcome["created"]
