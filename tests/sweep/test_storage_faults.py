"""A storage fault never hides a loss, and no password lands on disk: real SQLite files, a real PostgreSQL
server stopped for 10 s mid-sweep (a private one this test starts), an SQLite file deleted mid-sweep and
rebuilt from the trial log, refused corrupt and foreign files, and URL masking."""
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks
from sensitivity.studies.redaction import describe, reason
from sensitivity.studies.storage import StorageError, open_storage
from test_sweep import SLOW_EPOCHS
from test_sweep_faults import cli, write

REPO = Path(__file__).resolve().parents[2]
POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")
needs_torch = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")



def space(tmp_path, epochs=1):
    return write(tmp_path, epochs=epochs)


def command(tmp_path, *args):
    return [sys.executable, "-m", "sensitivity.cli", *map(str, args)]


def own_lines(stderr: str) -> list:
    """stderr without Ray's notice of token authentication, Optuna's "[I ...]" notes and our retry and
    heartbeat warnings."""
    return [line for line in stderr.strip().splitlines() if "Token authentication" not in line
            and not line.startswith("[I ") and "retrying for up to" not in line and "heartbeat" not in line]


def final(trials) -> list:
    return [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
            and not t.user_attrs.get("orphaned") and not t.user_attrs.get("surplus")]


# (e) masking --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url, shown", [
    ("postgresql://u:hunter2@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:p@[::1", "postgresql://u:***@[::1"),
    ("postgresql://u:p@ss@h:5/db", "postgresql://u:***@h:5/db"),
    ("postgresql://u@h/db?sslmode=require&password=hunter2", "postgresql://u@h/db?sslmode=require&password=***"),
    ("postgresql://u:a@h?password=b&x=1", "postgresql://u:***@h?password=***&x=1"),
    ("postgresql://h/db", "postgresql://h/db"),
    ("sqlite:////tmp/a.db", "sqlite:////tmp/a.db"),
    ("journal:results/x.journal", "journal:results/x.journal"),
])
def test_describe_masks_every_password_and_never_raises(url, shown):
    assert describe(url) == shown


@pytest.mark.parametrize("url", ["postgresql://u:hunter2@[::1", "postgresql://u:hunter2@127.0.0.1:1/db",
                                 "postgresql://u@127.0.0.1:1/db?password=hunter2",
                                 "postgresql+nodriver://u:hunter2@h/d"])
def test_a_storage_that_cannot_be_opened_is_one_line_without_password(url):
    with pytest.raises(StorageError) as caught:
        open_storage(url)
    message = str(caught.value)
    assert "hunter2" not in message and len(message.splitlines()) == 1 and "cannot be opened" in message


def test_reason_masks_a_url_quoted_in_a_driver_message():
    assert "hunter2" not in reason(ValueError('could not connect "postgresql://u:hunter2@h/db"'))


def test_the_storage_url_comes_from_the_environment(tmp_path, monkeypatch):
    from sensitivity.studies.storage import default_url
    monkeypatch.setenv("SENSITIVITY_STORAGE", f"sqlite:///{tmp_path}/env.db")
    assert default_url() == f"sqlite:///{tmp_path}/env.db"
    proc = cli(tmp_path, "studies", env={"SENSITIVITY_STORAGE": f"sqlite:///{tmp_path}/none.db"}, timeout=120)
    assert proc.returncode == 2 and f"{tmp_path}/none.db" in proc.stderr


# (d) files refused before Ray ---------------------------------------------------------------------------

def _optuna_db(path):
    """An Optuna database in one file (its WAL folded in)."""
    storage = open_storage(f"sqlite:///{path}")
    optuna.create_study(storage=storage, study_name="f").optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=200)
    storage.engine.dispose()
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA journal_mode=DELETE")


def _page_corrupt(path):
    _optuna_db(path)
    data = bytearray(path.read_bytes())
    page = 4096
    for at in range(2 * page, len(data) - page, 3 * page):  # page headers of b-tree pages, not the file header
        data[at:at + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))


def _foreign(path):
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        db.execute("INSERT INTO customers VALUES (1, 'Ada')")


def _unknown_schema(path):
    _optuna_db(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE alembic_version SET version_num = 'v99.0.0.z'")


def _not_sqlite(path):
    path.write_bytes(b"SQLite format 3\x00" + os.urandom(6000))


@needs_torch
@pytest.mark.parametrize("make, message", [(_page_corrupt, "corrupt"), (_foreign, "not an Optuna database"),
                                           (_unknown_schema, "unknown Optuna schema version 'v99.0.0.z'"),
                                           (_not_sqlite, "not an SQLite database")])
def test_unsound_sqlite_files_are_refused_before_ray_and_left_unchanged(tmp_path, make, message):
    db = tmp_path / "bad.db"
    make(db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    started = time.monotonic()
    proc = cli(tmp_path, "sweep", space(tmp_path), "--trials", 1, "--storage", f"sqlite:///{db}", "--no-progress",
               timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr[-2000:]
    assert "Token authentication" not in proc.stderr and time.monotonic() - started < 60  # Ray never started
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert not (tmp_path / "results" / "ray-processes").exists()


# (c) no password on disk --------------------------------------------------------------------------------

PASSWORD = "Pw-h1-7c3f9e21d"


@needs_torch
@pytest.mark.skipif(not POSTGRES, reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)")
def test_no_password_in_any_file_the_sweep_writes(tmp_path):
    """The server trusts local connections, so any password is accepted: it must appear nowhere."""
    url = POSTGRES.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
    url += ("&" if "?" in url else "?") + f"application_name=h1&password={PASSWORD}"
    proc = cli(tmp_path, "sweep", space(tmp_path), "--trials", 2, "--study", f"pw-{os.getpid()}-{time.time_ns()}",
               "--storage", url, "--no-progress", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert PASSWORD not in proc.stdout + proc.stderr
    assert not (tmp_path / "results" / "ray-tune").exists()  # Tune's state (tuner.pkl) went once the study held all
    grep = subprocess.run(["grep", "-r", "-l", "-a", PASSWORD, "results/"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert grep.returncode == 1 and not grep.stdout, grep.stdout


# (b) SQLite file deleted mid-sweep ----------------------------------------------------------------------

def _wait_for(predicate, timeout_s, driver, log):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert driver.poll() is None, log.read_text()[-3000:]
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    pytest.fail("timed out: " + log.read_text()[-3000:])


def _completed(url, study="f"):
    try:
        return [t for t in optuna.load_study(study_name=study, storage=url).get_trials()
                if t.state == TrialState.COMPLETE]
    except (KeyError, Exception):
        return []


@needs_torch
def test_sqlite_file_deleted_mid_sweep_is_exit_1_and_rebuilt_from_the_log(tmp_path):
    db = tmp_path / "results" / "optuna.db"
    url = f"sqlite:///{db}"
    log = tmp_path / "driver.log"
    driver = subprocess.Popen(command(tmp_path, "sweep", space(tmp_path, epochs=SLOW_EPOCHS), "--trials", 12,
                                      "--parallel", 2, "--no-progress"), cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=log.open("w"), text=True)
    done = _wait_for(lambda: _completed(url), 300, driver, log)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    out, _ = driver.communicate(timeout=120)
    lines = own_lines(log.read_text())
    assert driver.returncode == 1 and len(lines) == 1, log.read_text()[-3000:]
    assert "was deleted or replaced during the sweep" in lines[0] and "studies rebuild" in lines[0]
    assert "final trials" not in out and "Traceback" not in log.read_text()

    trial_log = tmp_path / "results" / "trial-logs" / "f.jsonl"
    logged = [json.loads(line) for line in trial_log.read_text().splitlines()]
    logged = [r for r in logged if r["kind"] == "trial"]
    new = f"sqlite:///{tmp_path}/rebuilt.db"
    proc = cli(tmp_path, "studies", "rebuild", trial_log, "--storage", new, timeout=120)
    assert proc.returncode == 0 and f"{len(logged)} trials restored" in proc.stdout, proc.stderr
    rebuilt = optuna.load_study(study_name="f", storage=new)
    trials = {t.user_attrs["rebuilt_from"]["number"]: t for t in rebuilt.get_trials()}
    assert len(trials) == len(logged) >= len(done)
    for t in done:  # every trial completed before the file went is back, as the driver stored it
        again = trials[t.number]
        assert again.state == TrialState.COMPLETE and again.values == t.values and again.params == t.params
        assert {k: v for k, v in again.user_attrs.items() if k != "rebuilt_from"} == t.user_attrs
        assert again.intermediate_values == t.intermediate_values
    assert rebuilt.user_attrs["space_fingerprint"] and rebuilt.metric_names == ["val_accuracy"]
    proc = cli(tmp_path, "studies", "rebuild", trial_log, "--storage", new, timeout=120)  # never twice
    assert proc.returncode == 2 and "already has trials" in proc.stderr


# (a) PostgreSQL stopped for 10 s mid-sweep --------------------------------------------------------------

@pytest.fixture
def private_postgres():
    """A PostgreSQL server of this test alone, which it may stop and start."""
    if not list(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        if os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") == "1":
            pytest.fail("PostgreSQL's binaries are missing")
        pytest.skip("PostgreSQL's binaries are missing")
    folder = tempfile.mkdtemp(prefix="sensitivity-pg-outage-")
    os.chmod(folder, 0o755)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PGDATA_DIR": folder, "PGPORT": str(port)}
    url = subprocess.run([str(REPO / "scripts" / "start_postgres.sh")], env=env, capture_output=True, text=True,
                         check=True, timeout=300).stdout.strip()
    pg_ctl = str(sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))[-1])
    run_as = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []

    def ctl(*args):
        subprocess.run([*run_as, pg_ctl, "-D", f"{folder}/data", *args], check=True, capture_output=True, timeout=120)

    def restart_after(seconds):
        ctl("stop", "-m", "fast", "-w")
        time.sleep(seconds)
        ctl("-l", f"{folder}/server.log", "-w", "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start")

    yield url, restart_after, folder
    subprocess.run([*run_as, pg_ctl, "-D", f"{folder}/data", "stop", "-m", "immediate"], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


@needs_torch
def test_a_10_s_postgresql_outage_mid_sweep_loses_nothing(tmp_path, private_postgres):
    url, restart_after, _ = private_postgres
    log = tmp_path / "driver.log"
    n = 6
    driver = subprocess.Popen(command(tmp_path, "sweep", space(tmp_path, epochs=SLOW_EPOCHS), "--trials", n,
                                      "--parallel", 2, "--storage", url, "--no-progress"), cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
    _wait_for(lambda: _completed(url), 300, driver, log)
    restart_after(10)
    assert driver.poll() is None, log.read_text()[-3000:]  # the driver waited through the outage
    out, _ = driver.communicate(timeout=600)
    assert driver.returncode == 0 and f"{n} final trials" in out, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text() and "retrying for up to" in log.read_text()
    trials = optuna.load_study(study_name="f", storage=url).get_trials()
    assert len(final(trials)) == n and not [t for t in trials if t.state == TrialState.RUNNING]
    assert all(t.state == TrialState.COMPLETE for t in final(trials))


def test_the_password_comes_from_pgpassword_or_pgpass_not_the_url(tmp_path, monkeypatch, private_postgres):
    """A server that asks for a password (scram-sha-256): a URL without one opens with libpq's PGPASSWORD or
    ~/.pgpass, and without either fails in one line."""
    from urllib.parse import urlparse

    url, _, folder = private_postgres
    port = urlparse(url).port
    bin_dir = sorted(Path("/usr/lib/postgresql").glob("*/bin/psql"))[-1].parent
    run_as = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
    subprocess.run([*run_as, str(bin_dir / "psql"), "-h", folder, "-p", str(port), "-U", "postgres", "-d",
                    "sensitivity", "-c", f"ALTER USER postgres PASSWORD '{PASSWORD}'"], check=True, capture_output=True)
    (Path(folder) / "data" / "pg_hba.conf").write_text("local all all trust\n"
                                                       "host all all 127.0.0.1/32 scram-sha-256\n")
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", f"{folder}/data", "reload"], check=True,
                   capture_output=True)
    time.sleep(1)  # the postmaster rereads pg_hba.conf on SIGHUP
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("PGPASSFILE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(StorageError) as caught:
        open_storage(url)
    assert len(str(caught.value).splitlines()) == 1 and "password" in str(caught.value)

    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    optuna.create_study(study_name="from-pgpassword", storage=open_storage(url))
    monkeypatch.delenv("PGPASSWORD")
    pgpass = tmp_path / ".pgpass"
    pgpass.write_text(f"127.0.0.1:{port}:*:postgres:{PASSWORD}\n")
    pgpass.chmod(0o600)
    assert "from-pgpassword" in optuna.get_all_study_names(storage=open_storage(url))


# the trial log and the pickled searcher, without Ray ----------------------------------------------------

def test_the_trial_log_rebuilds_complete_pruned_and_failed_trials(tmp_path, monkeypatch):
    import pickle

    from sensitivity.sweep.trial_log import log_study, rebuild
    from test_searcher import epoch, space

    monkeypatch.chdir(tmp_path)
    from sensitivity.sweep.searcher import StudySearcher
    url = f"sqlite:///{tmp_path}/lost.db"
    study = optuna.create_study(study_name="u", storage=open_storage(url), direction="maximize")
    study.set_user_attr("space_fingerprint", "abc")
    path = log_study(study)
    s = StudySearcher(study, space(), "me", 3, {"timeout": None, "threads": 1}, pruning=True, log_path=path)
    for i in range(3):
        s.suggest(f"t{i}")
        s.on_trial_result(f"t{i}", epoch(1, 0.4))
    s.on_trial_complete("t0", {**epoch(2, 0.9), "final": True,
                               "result_json": json.dumps({"status": "ok", "val_accuracy": 0.9})})
    s.on_trial_complete("t1", epoch(1, 0.4))  # stopped by the scheduler: PRUNED
    s.on_trial_complete("t2", None, error=True)
    copy = pickle.loads(pickle.dumps(s))  # what Tune writes to tuner.pkl: no study, found again in-process
    assert "lost.db" not in str(pickle.dumps(s)) and copy.study is study
    rebuilt_url = f"sqlite:///{tmp_path}/new.db"
    assert rebuild(path, rebuilt_url) == ("u", 3)
    again = optuna.load_study(study_name="u", storage=rebuilt_url)
    assert again.user_attrs == study.user_attrs
    by_number = sorted(again.get_trials(), key=lambda t: t.user_attrs["rebuilt_from"]["number"])
    for old, new in zip(study.get_trials(), by_number):
        assert (new.state, new.values, new.params, new.intermediate_values) == \
            (old.state, old.values, old.params, old.intermediate_values)
        assert {k: v for k, v in new.user_attrs.items() if k != "rebuilt_from"} == old.user_attrs
    assert [t.state for t in again.get_trials()] == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL]


def test_a_trial_killed_before_its_driver_was_recorded_is_an_orphan_unless_a_live_driver_may_own_it(tmp_path):
    from sensitivity.studies import records
    from sensitivity.sweep.recovery import recover
    study = optuna.create_study(study_name="o", storage=open_storage(f"sqlite:///{tmp_path}/o.db"))
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})  # killed before set_user_attr("driver")
    records.beat(study, "other")  # a live driver (this process) that may be about to record itself
    assert recover(study, "me").orphaned == []
    study._storage.set_study_system_attr(study._study_id, records.HEARTBEAT_PREFIX + "other", {"time": 0})
    assert recover(study, "me").orphaned == [trial.number]
    reason = study.get_trials()[0].user_attrs["reason"]
    assert reason == "orphaned: its driver stopped between asking for the trial and recording itself as the owner"


def test_heartbeat_failures_are_logged_and_declare_the_storage_lost_past_the_window(tmp_path, monkeypatch, caplog):
    import sqlalchemy.exc

    from sensitivity.studies import storage_health
    from sensitivity.sweep import driver
    study = optuna.create_study(study_name="h", storage=open_storage(f"sqlite:///{tmp_path}/h.db"))
    monkeypatch.setattr(driver, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(storage_health, "RETRY_WINDOW_S", 0.3)
    storage_health.reset_lost()
    stop = driver._start_heartbeat(study, "me", f"sqlite:///{tmp_path}/h.db")

    def down(*_):
        raise sqlalchemy.exc.OperationalError("INSERT", {}, Exception("server closed the connection"))
    monkeypatch.setattr(driver, "beat", down)
    deadline = time.monotonic() + 10
    while storage_health.lost_reason() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    stop()
    lost = storage_health.lost_reason()
    assert "no heartbeat written for" in lost and "server closed the connection" in lost
    failures = [r for r in caplog.records if "heartbeat failed" in r.getMessage()]
    assert len(failures) >= driver.HEARTBEAT_FAILURES
    storage_health.reset_lost()


def test_the_final_count_refuses_fewer_than_n_or_a_trial_left_running(tmp_path):
    from sensitivity.sweep.driver import SweepFailed, _check_final
    url = f"sqlite:///{tmp_path}/c.db"
    study = optuna.create_study(study_name="c", storage=open_storage(url))
    study.tell(study.ask(), 1.0)
    with pytest.raises(SweepFailed, match=r"^study c in sqlite:///\S+ has 1 final trials of 2; rerun"):
        _check_final(study, 2, url, "me", budget_out=False)
    assert _check_final(study, 2, url, "me", budget_out=True) == 1  # the user's time budget ran out
    study.ask().set_user_attr("driver", "me")
    with pytest.raises(SweepFailed, match=r"has 1 final trials of 1, and trials \[1\] of this run left RUNNING"):
        _check_final(study, 1, url, "me", budget_out=False)


def test_rebuild_keeps_one_run_per_configuration_and_seed(tmp_path):
    """A driver killed between logging a trial and writing it: the orphan's retry is logged again."""
    from sensitivity.sweep.trial_log import rebuild
    dist = {"x": optuna.distributions.distribution_to_json(optuna.distributions.FloatDistribution(0, 1))}

    def trial(number, value, when, **attrs):
        return {"kind": "trial", "key": f"d:{number}", "number": number, "state": "COMPLETE", "values": [value],
                "params": {"x": value}, "distributions": dist, "user_attrs": {"config_id": "c", "seed": 0, **attrs},
                "intermediate_values": {}, "datetime_complete": when}
    lines = [{"kind": "study", "study": "d", "directions": ["MAXIMIZE"], "metric_names": None, "user_attrs": {}},
             trial(0, 0.1, "2026-01-01T00:00:01"), trial(1, 0.2, "2026-01-01T00:00:02", retry_of=0)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"kind": "tri')
    assert rebuild(tmp_path / "d.jsonl", f"sqlite:///{tmp_path}/d.db") == ("d", 1)  # a cut last line is skipped
    (t,) = optuna.load_study(study_name="d", storage=f"sqlite:///{tmp_path}/d.db").get_trials()
    assert t.value == 0.2 and t.user_attrs["retry_of"] == 0
