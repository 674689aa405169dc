"""Storages and recovery against real backends: SQLite, a journal file, and a real PostgreSQL server.

PostgreSQL runs when SENSITIVITY_TEST_POSTGRES_URL is set (scripts/start_postgres.sh prints one; .ci/run
starts it); with SENSITIVITY_REQUIRE_POSTGRES=1, as in CI, its absence is a failure, not a skip.
"""
import os
import subprocess
import sys
import time
import uuid

import optuna
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks
from sensitivity.studies import records
from sensitivity.sweep.recovery import MAX_ATTEMPTS, recover
from sensitivity.studies.redaction import describe
from sensitivity.studies.storage import StorageError, open_storage

POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")


def _postgres_param():
    if POSTGRES:
        return pytest.param(POSTGRES, id="postgresql")
    if os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") == "1":
        pytest.fail("SENSITIVITY_REQUIRE_POSTGRES=1 but SENSITIVITY_TEST_POSTGRES_URL is not set")
    return pytest.param(None, id="postgresql", marks=pytest.mark.skip(reason="no PostgreSQL server (set "
                                                                               "SENSITIVITY_TEST_POSTGRES_URL)"))


@pytest.fixture(params=["sqlite", "journal", _postgres_param()])
def storage_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/s.db"
    if request.param == "journal":
        return f"journal:{tmp_path}/s.journal"
    return request.param


def new_study(url):
    return optuna.create_study(study_name=f"s-{uuid.uuid4().hex[:8]}", storage=open_storage(url))


def fake_dead_driver(study, driver_id):
    """A heartbeat of a process on this host that no longer exists."""
    study._storage.set_study_system_attr(study._study_id, records.HEARTBEAT_PREFIX + driver_id, {
        "time": 9e12, "host": __import__("socket").gethostname(), "pid": 2**22 + 1, "created": 0.0})


def test_recovery_fails_dead_drivers_trials_only_and_requeues_once(storage_url):
    study = new_study(storage_url)
    records.beat(study, "live")
    fake_dead_driver(study, "dead")
    done = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    done.set_user_attr("driver", "dead")
    study.tell(done, 0.5)
    orphan = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    orphan.set_user_attr("driver", "dead")
    orphan.set_user_attr("seed", 3)
    live = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    live.set_user_attr("driver", "live")

    assert recover(study, "me").orphaned == [orphan.number]
    assert recover(study, "me").orphaned == []  # idempotent
    trials = {t.number: t for t in study.get_trials()}
    assert trials[orphan.number].state == TrialState.FAIL and trials[orphan.number].user_attrs["orphaned"]
    assert trials[live.number].state == TrialState.RUNNING
    waiting = [t for t in trials.values() if t.state == TrialState.WAITING]
    assert len(waiting) == 1 and waiting[0].user_attrs == {"seed": 3, "retry_of": orphan.number, "attempt": 2}
    assert waiting[0].system_attrs["fixed_params"] == trials[orphan.number].params  # asked with these
    assert records.count_final(study) == 1


def test_a_configuration_orphaned_again_and_again_runs_at_most_max_attempts_times(storage_url):
    """Repeated kills that hit the retry itself once ran one configuration 4 times; now each retry is the
    next attempt, and the MAX_ATTEMPTS-th orphan is a final FAIL that says so, queued no more."""
    study = new_study(storage_url)
    fake_dead_driver(study, "dead")
    distribution = {"x": optuna.distributions.FloatDistribution(0, 1)}
    first = study.ask(distribution)
    first.set_user_attr("driver", "dead")
    runs = [first.number]
    for _ in range(MAX_ATTEMPTS + 2):  # every run of the configuration killed with its driver
        recover(study, "me")
        waiting = [t for t in study.get_trials() if t.state == TrialState.WAITING]
        if not waiting:
            break
        retry = study.ask()  # the queued retry
        retry.set_user_attr("driver", "dead")
        runs.append(retry.number)
    trials = {t.number: t for t in study.get_trials()}
    assert len(runs) == MAX_ATTEMPTS and [trials[n].user_attrs.get("attempt", 1) for n in runs] == [1, 2, 3]
    last = trials[runs[-1]]
    assert last.state == TrialState.FAIL and not last.user_attrs["orphaned"] and last.user_attrs["retries_exhausted"]
    assert f"attempt 3 of at most {MAX_ATTEMPTS}: not retried again" in last.user_attrs["reason"]
    assert records.count_final(study) == 1 and all(trials[n].user_attrs["orphaned"] for n in runs[:-1])


def test_an_orphan_stopped_before_its_first_suggestion_is_retried_only_if_it_was_queued(storage_url):
    """A kill between `ask` and the first suggestion leaves a RUNNING trial without params (CI saw one
    retried with freshly sampled ones): a queued trial keeps its configuration in `fixed_params` and is
    retried with it; one that drew nothing has nothing to retry, and says so."""
    study = new_study(storage_url)
    fake_dead_driver(study, "dead")
    study.enqueue_trial({"x": 0.25}, user_attrs={"seed": 1})
    queued = study.ask()  # popped from the queue, killed before suggest_float("x")
    queued.set_user_attr("driver", "dead")
    drawn_nothing = study.ask()
    drawn_nothing.set_user_attr("driver", "dead")

    assert recover(study, "me") == ([queued.number, drawn_nothing.number], [queued.number])
    assert recover(study, "me") == ([], [])
    trials = {t.number: t for t in study.get_trials()}
    waiting = [t for t in trials.values() if t.state == TrialState.WAITING]
    assert [(t.user_attrs["retry_of"], t.system_attrs["fixed_params"]) for t in waiting] == [
        (queued.number, {"x": 0.25})]
    assert "drawn no configuration, so none is retried" in trials[drawn_nothing.number].user_attrs["reason"]
    assert "drawn no configuration" not in trials[queued.number].user_attrs["reason"]
    retry = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    assert retry.params == {"x": 0.25}


def test_a_stale_heartbeat_from_another_host_makes_orphans(storage_url):
    study = new_study(storage_url)
    study._storage.set_study_system_attr(study._study_id, records.HEARTBEAT_PREFIX + "far", {
        "time": 0.0, "host": "elsewhere", "pid": 1, "created": 0.0})
    trial = study.ask()
    trial.set_user_attr("driver", "far")
    assert recover(study, "me").orphaned == [trial.number]


def test_unreachable_storage_is_a_clear_error_without_password():
    with pytest.raises(StorageError, match=r"postgresql://u:\*\*\*@127.0.0.1:1/db cannot be opened"):
        open_storage("postgresql://u:hunter2@127.0.0.1:1/db")
    assert describe("postgresql://u:hunter2@h/db") == "postgresql://u:***@h/db"


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path):
    """A driver and a reader (the dashboard, a test) race to create Optuna's tables in a new file."""
    code = ("import sys; from sensitivity.studies.storage import open_storage; "
            "open_storage(sys.argv[1]); print('opened')")
    for attempt in range(4):
        url = f"sqlite:///{tmp_path}/race{attempt}.db"
        procs = [subprocess.Popen([sys.executable, "-c", code, url], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0 and out.strip() == "opened", err[-2000:]


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_two_drivers_share_one_postgresql_study(tmp_path):
    if not POSTGRES:
        if os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") == "1":
            pytest.fail("SENSITIVITY_TEST_POSTGRES_URL is not set")
        pytest.skip("no PostgreSQL server")
    study = f"two-{uuid.uuid4().hex[:8]}"
    space = tmp_path / "s.yaml"
    space.write_text(f"""
study: {study}
dataset: digits
frameworks: [torch]
parameters: {{lr: {{type: float, low: 0.01, high: 0.3, log: true}}}}
fixed: {{epochs: 3}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
""")
    args = [sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--trials", "6", "--storage", POSTGRES,
            "--no-progress"]
    drivers = [subprocess.Popen(args, cwd=tmp_path / d if (tmp_path / d).mkdir() is None else None,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in ("a", "b")]
    outputs = [d.communicate(timeout=600) for d in drivers]
    assert all(d.returncode == 0 for d in drivers), [o[1][-2000:] for o in outputs]
    trials = optuna.load_study(study_name=study, storage=POSTGRES).get_trials()
    assert not [t for t in trials if t.user_attrs.get("orphaned")]  # no driver failed the other's trials
    assert sum(records.is_final(t) for t in trials) == 6
    assert {t.user_attrs["driver"] for t in trials if records.is_final(t)}.__len__() == 2


class FlakyStorage:
    """A storage call failing `failures` times with `error` before it answers."""

    url = "postgresql://analyst:s3cret@db.example/optuna"

    def __init__(self, failures: int, error: Exception):
        self.failures, self.error, self.calls = failures, error, 0

    def call(self):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "answer"


def _locked():
    import sqlalchemy.exc
    return sqlalchemy.exc.OperationalError("UPDATE trials", {}, Exception("database is locked"))


def test_a_transient_error_is_retried_with_backoff_and_one_warning(caplog):
    from sensitivity.studies.storage_health import retried

    flaky = FlakyStorage(2, _locked())
    started = time.monotonic()
    assert retried(FlakyStorage.call)(flaky) == "answer"
    assert flaky.calls == 3 and time.monotonic() - started >= 1.5  # slept 0.5 s, then 1 s
    warnings = [r.getMessage() for r in caplog.records if "retrying for up to 60 s" in r.getMessage()]
    assert len(warnings) == 1 and "s3cret" not in warnings[0] and "database is locked" in warnings[0]


def test_past_the_window_a_non_transient_error_or_a_single_attempt_raise(monkeypatch):
    from sensitivity.studies import storage_health

    monkeypatch.setattr(storage_health, "RETRY_WINDOW_S", 1.2)  # 0.5 s fits, then 0.5 + 1 s would end past it
    flaky = FlakyStorage(5, _locked())
    with pytest.raises(type(_locked())):
        storage_health.retried(FlakyStorage.call)(flaky)
    assert flaky.calls == 2
    bug = FlakyStorage(5, KeyError("not a storage error"))
    with pytest.raises(KeyError):
        storage_health.retried(FlakyStorage.call)(bug)
    assert bug.calls == 1
    once = FlakyStorage(5, _locked())
    with storage_health.single_attempt(), pytest.raises(type(_locked())):
        storage_health.retried(FlakyStorage.call)(once)
    assert once.calls == 1


def test_every_call_of_an_rdb_storage_retries(tmp_path):
    """BaseStorage's methods and the private ones Optuna's cache calls all go through the retry."""
    storage = open_storage(f"sqlite:///{tmp_path}/r.db")
    for name in ("create_new_study", "get_all_trials", "set_trial_user_attr", "record_heartbeat",
                 "_create_new_trial", "_get_trials"):
        assert hasattr(getattr(type(storage), name), "retry"), name  # tenacity's wrapper


def test_a_sound_sqlite_file_is_checked_again_only_once_changed(tmp_path, monkeypatch):
    from sensitivity.studies import catalog, storage as storage_module

    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    study = optuna.create_study(study_name="s", storage=open_storage(url))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    checks = []
    real = storage_module._check_sqlite
    monkeypatch.setattr(storage_module, "_check_sqlite", lambda *a: checks.append(a) or real(*a))
    with pytest.raises(StorageError, match="no study 'other'"):  # a refused command remembers nothing
        catalog.load("other", url)
    assert len(checks) == 1 and not (tmp_path / "cache").exists()
    catalog.load("s", url)
    catalog.load("s", url)  # unchanged since a reader found it sound: not read again
    assert len(checks) == 2 and len(list((tmp_path / "cache" / "sound-sqlite").iterdir())) == 1
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)  # written: checked again
    catalog.load("s", url)
    assert len(checks) == 3
    data = bytearray(db.read_bytes())  # then damaged: refused
    for at in range(2 * 4096, len(data) - 4096, 3 * 4096):
        data[at:at + 16] = b"\xff" * 16
    db.write_bytes(bytes(data))
    with pytest.raises(StorageError, match="corrupt"):
        catalog.load("s", url)


def test_checking_a_file_keeps_the_locks_this_process_holds_on_it(tmp_path, monkeypatch):
    """SQLite's locks are POSIX advisory locks, which a process drops on closing any descriptor of the file: the
    check must never open the file outside SQLite while a storage of this process holds it (a driver checks
    another study's URL; two stages share a file). Otherwise another process may take the file from under it
    (here: leave WAL mode while this process reads it), and a write then corrupts it."""
    import shutil
    import sqlite3

    from sensitivity.studies import catalog
    from sensitivity.studies.storage import check_sqlite_file

    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    optuna.create_study(study_name="s", storage=open_storage(url)).optimize(lambda t: t.suggest_float("x", 0, 1), 2)
    probe = ("import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)\n"
             "try:\n    print(con.execute('PRAGMA journal_mode=DELETE').fetchone()[0])\n"
             "except sqlite3.OperationalError as e:\n    print(e)\n")
    holder = sqlite3.connect(db, isolation_level=None)
    assert holder.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM trials").fetchall()  # a reader of this process holds the file
    try:
        for remembered in (True, False):  # the record read, or checked afresh
            if remembered:
                catalog.load("s", url)
            else:
                shutil.rmtree(tmp_path / "cache")
            check_sqlite_file(url)
            answer = subprocess.run([sys.executable, "-c", probe, str(db)], capture_output=True, text=True)
            assert answer.stdout.strip() == "database is locked", (remembered, answer.stdout + answer.stderr)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
