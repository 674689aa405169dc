"""Issue 33's last input edges: an SQLite URL with a query string (`?timeout=abc`, `?uri=true`, which makes
`file::memory:` an in-memory database), through --storage and SENSITIVITY_STORAGE, on every command that opens
a storage; and a sweep under an open-file limit of 24 (`prlimit --nofile=24`), which Ray would meet with a
traceback after the study was written. Each is one line, exit 2, nothing created, within 10 s."""
import os
import resource
import subprocess
import sys
import time

import optuna
import pytest
from fuzz_runner import OUTCOMES, check, files_in

from fuzz_cases import _space_text

QUERIES = ["?timeout=abc", "?timeout=5", "?uri=true", "?mode=memory&uri=true", "?", "?password=s3cret"]
URLS = [f"sqlite:///x.db{q}" for q in QUERIES] + ["sqlite:///file::memory:?uri=true",
                                                 "sqlite:///file:x.db?mode=memory&cache=shared&uri=true"]
SPACE = {"space.yaml": _space_text()}
COMMANDS = {"sweep": (["sweep", "space.yaml", "--trials", "1"], SPACE), "studies": (["studies"], {}),
            "export": (["export", "x", "--out", "x.csv"], {}), "report": (["report", "x", "--out", "r.html"], {}),
            "dashboard": (["dashboard", "--port", "65002"], {})}
CASES = [(f"{command} --storage {url}", argv + ["--storage", url], files)
         for url in URLS for command, (argv, files) in COMMANDS.items()]
CASES += [(f"sweep SENSITIVITY_STORAGE={url}", COMMANDS["sweep"][0], SPACE, url) for url in URLS[:3] + URLS[-2:]]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_sqlite_url_with_a_query_is_refused_in_one_line(refused, monkeypatch, case):
    name, argv, files, *environ = case
    if environ:
        monkeypatch.setenv("SENSITIVITY_STORAGE", environ[0])
    started = time.monotonic()
    outcome = refused("storage", name, argv, files)
    check(outcome)
    assert time.monotonic() - started < 10
    assert "takes no query string" in outcome["stderr"], outcome["stderr"]
    assert "s3cret" not in outcome["stderr"]


def test_a_file_named_file_memory_without_a_query_is_a_file_not_memory(tmp_path):
    """`sqlite:///file::memory:` without uri=true is a file of that name: honest, and kept after the run."""
    from sensitivity.studies.storage import check_url, open_storage
    url = f"sqlite:///{tmp_path}/file::memory:"
    check_url(url)
    optuna.create_study(study_name="m", storage=open_storage(url))
    assert (tmp_path / "file::memory:").is_file()
    assert optuna.get_all_study_names(storage=url) == ["m"]


def _few_files():
    resource.setrlimit(resource.RLIMIT_NOFILE, (24, 24))  # as `prlimit --nofile=24`


def test_a_sweep_under_an_open_file_limit_of_24_is_one_line_and_writes_nothing(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "space.yaml").write_bytes(SPACE["space.yaml"])
    before = files_in(work)
    env = {k: v for k, v in os.environ.items() if k not in ("SENSITIVITY_STORAGE", "RAY_ADDRESS")}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", "space.yaml", "--trials", "1"],
                          cwd=work, env={**env, "SENSITIVITY_DATA_DIR": str(work / "data")}, capture_output=True,
                          text=True, timeout=60, preexec_fn=_few_files)
    elapsed = time.monotonic() - started
    created = sorted(files_in(work) - before)
    OUTCOMES["environment"].append({"name": "sweep under nofile 24", "exit": proc.returncode, "created": created,
                                    "traceback": "Traceback" in proc.stderr or None,
                                    "stderr_lines": len(proc.stderr.splitlines()), "stderr": proc.stderr[:300]})
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr[-2000:]
    assert "open-file limit 24" in proc.stderr and "ulimit -n" in proc.stderr
    assert created == [] and elapsed < 10, (created, elapsed)


def test_reading_commands_run_under_an_open_file_limit_of_24(tmp_path):
    """`studies` and `export` need no Ray: under 24 open files they still run (exit 0), and say so honestly."""
    storage = f"sqlite:///{tmp_path}/s.db"
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    study.add_trial(optuna.trial.create_trial(params={"x": 0.5}, values=[0.5],
                                              distributions={"x": optuna.distributions.FloatDistribution(0, 1)}))
    for argv in (["studies", "--storage", storage], ["export", "s", "--storage", storage, "--out", "s.csv"]):
        proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", *argv], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60, preexec_fn=_few_files)
        assert proc.returncode == 0, (argv, proc.stderr[-2000:])
    assert (tmp_path / "s.csv").stat().st_size > 0
