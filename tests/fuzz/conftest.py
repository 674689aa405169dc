"""The fuzz suite's runner: a command line run in-process (sensitivity.cli.main) in a fresh folder, with
Ray, a study, a trial and the dashboard forbidden (each raises, so a case that reached one counts as a
traceback), and the counts per input kind printed at the end of the run and written as JSON to
$SENSITIVITY_FUZZ_SUMMARY when it is set (scripts/fuzz_counts.py)."""
from __future__ import annotations

import importlib.util
import json
import os
import traceback
from pathlib import Path

import pytest

from fuzz_runner import BY_OUTCOME, OUTCOMES, Reached, files_in, summary

# every case runs a command that opens a study: not collected where Optuna is not installed (.venv-legacy)
collect_ignore_glob = [] if importlib.util.find_spec("optuna") else ["test_*.py"]


@pytest.fixture
def refused(tmp_path, monkeypatch, capsys):
    """run(kind, argv, files): write `files` in a fresh folder, run the command there in-process, record the
    outcome (unless `record` is False) and return it: exit code, stderr lines, the traceback (None) and the
    paths created."""
    import optuna

    from sensitivity import cli
    from sensitivity import ray_cluster
    from sensitivity.trial import runner

    def forbid(what):
        def reached(*args, **kwargs):
            raise Reached(f"{what} was reached")
        return reached

    monkeypatch.setattr(ray_cluster, "init_ray", forbid("Ray"))
    monkeypatch.setattr(ray_cluster, "clean_up_leftovers", forbid("Ray's clean-up"))
    monkeypatch.setattr(optuna, "create_study", forbid("a study"))
    monkeypatch.setattr(runner, "run_trial", forbid("a trial"))
    monkeypatch.setattr(os, "execv", forbid("the dashboard"))
    monkeypatch.delenv("SENSITIVITY_STORAGE", raising=False)
    work = tmp_path / "work"
    monkeypatch.setenv("SENSITIVITY_DATA_DIR", str(work / "data"))  # empty unless a case writes files there
    work.mkdir()
    monkeypatch.chdir(work)

    def run(kind: str, name: str, argv: list, files: dict, record: bool = True) -> dict:
        for relative, body in files.items():
            path = work / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(body if isinstance(body, bytes) else body.encode())
        before = files_in(work)
        capsys.readouterr()
        code, trace = None, None
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
        except Exception:  # noqa: BLE001 - what the suite counts
            trace = traceback.format_exc()
        err = capsys.readouterr().err
        outcome = {"name": name, "exit": code, "traceback": trace, "stderr_lines": len(err.splitlines()),
                   "stderr": err, "created": sorted(files_in(work) - before)}
        if record:
            OUTCOMES[kind].append(outcome)
        return outcome
    return run


def pytest_terminal_summary(terminalreporter):
    if not OUTCOMES:
        return
    table = summary()
    terminalreporter.write_sep("-", "fuzz counts per input kind")
    for kind, row in table.items():
        terminalreporter.write_line(f"{kind:<11} cases {row['cases']:>4}  exit codes {row['exit_codes']}  "
                                    f"tracebacks {row['tracebacks']}  not one line {row['not_one_line']}  "
                                    f"files created {row['files_created']}  writes before refusal "
                                    f"{row['writes_before_refusal']}  hangs {row['hangs']}")
    total = {name: sum(row["by_outcome"][name] for row in table.values()) for name in BY_OUTCOME}
    terminalreporter.write_line("all kinds: " + ", ".join(f"{name} {count}" for name, count in total.items()))
    if os.environ.get("SENSITIVITY_FUZZ_SUMMARY"):
        messages = {kind: [{"case": o["name"], "exit": o["exit"], "stderr": o["stderr"].strip()[:300]} for o in outcomes]
                    for kind, outcomes in OUTCOMES.items()}
        Path(os.environ["SENSITIVITY_FUZZ_SUMMARY"]).write_text(json.dumps({"counts": table, "cases": messages},
                                                                           indent=1))
