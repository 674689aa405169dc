"""No process the tool starts carries a storage password in its argv (/proc/PID/cmdline, which every user of
the machine can read): the dashboard gets it in PGPASSWORD (its environment, the user's own to read), and a
sweep's driver, reaper, Ray processes and framework workers get no storage URL at all. A real PostgreSQL
(SENSITIVITY_TEST_POSTGRES_URL); its server trusts local connections, so any password is accepted."""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from sensitivity import frameworks
from test_sweep_faults import write

POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")
ENCODED, PASSWORD = "Pw%40a9-5e7c1b", "Pw@a9-5e7c1b"  # as written in the URL, as the server is given it
TAIL = "a9-5e7c1b"  # in neither form may even the part after the '@' show


def _require_postgres():
    if not POSTGRES and os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") == "1":
        pytest.fail("SENSITIVITY_REQUIRE_POSTGRES=1 but SENSITIVITY_TEST_POSTGRES_URL is not set")
    return pytest.mark.skipif(not POSTGRES, reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)")


needs_postgres = _require_postgres()


def secret_url(where: str) -> str:
    if where == "user":
        return re.sub(r"^([\w+]+://[^:@/]+)@", rf"\1:{ENCODED}@", POSTGRES, count=1)
    return POSTGRES + ("&" if "?" in POSTGRES else "?") + f"sslmode=disable&password={ENCODED}"


def cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def with_secret(commands: dict) -> dict:
    return {pid: line for pid, line in commands.items() if TAIL.encode() in line}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def end(processes) -> None:
    """SIGKILL, by pid, the processes this test started (those still running)."""
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


@needs_postgres
@pytest.mark.parametrize("given, where", [("env", "user"), ("env", "query"), ("argv", "user")])
def test_the_dashboard_gets_its_password_in_its_environment_not_its_argv(tmp_path, given, where):
    url, port = secret_url(where), free_port()
    args = ["--storage", url] if given == "argv" else []
    env = {**os.environ, "SENSITIVITY_STORAGE": url} if given == "env" else dict(os.environ)
    env.pop("PGPASSWORD", None)
    proc = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", "dashboard", "--port", str(port), *args],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    started = []
    try:
        deadline = time.monotonic() + 60
        while True:  # until the dashboard answers with the storage's studies: it has read its storage
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, "the dashboard did not answer in 60 s"
                time.sleep(0.5)
        started = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        commands = {p.pid: cmdline(p.pid) for p in started}
        print(f"{len(commands)} process(es):", *(line.replace(b"\0", b" ").decode() for line in commands.values()))
        assert b"optuna-dashboard" in commands[proc.pid]  # it became the dashboard
        assert not with_secret(commands), with_secret(commands)
        assert f"PGPASSWORD={PASSWORD}".encode() in Path(f"/proc/{proc.pid}/environ").read_bytes().split(b"\0")
    finally:
        end([*started, psutil.Process(proc.pid)] if proc.poll() is None else started)
        proc.wait(timeout=30)


def test_a_url_without_password_reaches_the_dashboard_as_it_is():
    from sensitivity.studies.catalog import _without_password

    assert _without_password("postgresql://u@h:5/db?sslmode=require") == ("postgresql://u@h:5/db?sslmode=require",
                                                                           None)
    assert _without_password("postgresql://u:p%40ss%2Fx@h:5/db?sslmode=require") == (
        "postgresql://u@h:5/db?sslmode=require", "p@ss/x")
    assert _without_password("postgresql+psycopg://h/db?password=a&x=1") == ("postgresql+psycopg://h/db?x=1", "a")
    assert _without_password("/data/s.journal") == ("/data/s.journal", None)
    assert _without_password("sqlite:////data/s.db") == ("sqlite:////data/s.db", None)


@needs_postgres
@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_no_process_of_a_sweep_has_the_password_in_its_argv(tmp_path):
    """Every process the sweep starts, read every 0.1 s while it runs: the storage URL from SENSITIVITY_STORAGE
    (user part and query string) reaches none of their argvs."""
    url = secret_url("user") + ("&" if "?" in POSTGRES else "?") + f"password={ENCODED}"
    env = {**os.environ, "SENSITIVITY_STORAGE": url}
    study = f"argv-{os.getpid()}-{time.time_ns()}"
    driver = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", "sweep", str(write(tmp_path)), "--trials",
                               "1", "--study", study, "--no-progress"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    commands, seen = {}, {}
    try:
        me = psutil.Process(driver.pid)
        while driver.poll() is None:
            try:
                for process in [me, *me.children(recursive=True)]:
                    if process.pid not in commands or not commands[process.pid]:
                        try:
                            commands[process.pid] = cmdline(process.pid)
                            seen[process.pid] = process
                        except OSError:
                            pass
            except psutil.NoSuchProcess:
                pass
            time.sleep(0.1)
        stderr = driver.stderr.read()
        assert driver.returncode == 0, stderr[-3000:]
    finally:
        if driver.poll() is None:
            end([psutil.Process(driver.pid)])
        end(seen.values())  # whatever outlived the driver: by pid, only what this test started
        driver.wait(timeout=60)
    names = b" ".join(commands.values())
    print(f"{len(commands)} processes read, {len(with_secret(commands))} with the password")
    assert b"gcs_server" in names and b"raylet" in names and b"sensitivity.trial.worker" in names, names[:3000]
    assert not with_secret(commands), with_secret(commands)
    assert TAIL not in stderr
