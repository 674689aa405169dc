"""The fuzz suite's bookkeeping, shared by its conftest and tests (a module of its own: `conftest` is a name
every test folder has): the outcomes per input kind, the assertion every case must pass, and the counts."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

OUTCOMES: dict = defaultdict(list)  # input kind -> one dict per case


class Reached(RuntimeError):
    """A refused case got as far as something that runs or writes."""


def files_in(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def check(outcome: dict) -> None:
    """The suite's assertion: no traceback, one line on stderr, exit 2, nothing created."""
    assert outcome["traceback"] is None, outcome["traceback"]
    assert outcome["stderr_lines"] == 1, outcome["stderr"]
    assert outcome["exit"] == 2, outcome
    assert outcome["created"] == [], outcome["created"]


def summary() -> dict:
    table = {}
    for kind, outcomes in OUTCOMES.items():
        exits = defaultdict(int)
        for o in outcomes:
            exits[str(o["exit"])] += 1
        table[kind] = {"cases": len(outcomes), "exit_codes": dict(exits),
                       "tracebacks": sum(o["traceback"] is not None for o in outcomes),
                       "not_one_line": sum(o["stderr_lines"] != 1 for o in outcomes),
                       "files_created": sum(len(o["created"]) for o in outcomes)}
    return table
