"""Issue 44: every wait is bounded and named. In-process (Ray and study creation forbidden by the `refused`
fixture, so a case that got past its check fails as "ran"), each within 10 s (SIGALRM; past it, a hang):

- `--address` (or RAY_ADDRESS) at a port where no Ray head listens but something else does (an HTTP server, a
  listener that never answers, one that hangs up, one that speaks SSH): one line, exit 2, nothing written;
- the study's trial log a FIFO (or a device, a folder): one line, exit 2, nothing written;
- a journal's lock that no writer holds (a link to nothing or to another file, a file, a folder): one line naming
  it, exit 1, nothing written; a stale lock to the journal broken after the grace period with one line and no
  Optuna warning; a lock a live writer holds waited for, silently.
"""
import http.server
import inspect
import os
import socket
import threading
import time

import optuna
import pytest
from fuzz_runner import Hang, hang_guard, hung

from fuzz_cases import _space_text
from sensitivity.studies import journal_lock
from sensitivity.studies.storage import open_storage

LIMIT_S = 10
SWEEP = ["sweep", "space.yaml", "--trials", "1"]
SPACE = {"space.yaml": _space_text()}  # study fz


def within(refused, kind, name, argv, files):
    """`refused(...)` under a 10 s guard; (outcome, seconds)."""
    started = time.monotonic()
    try:
        with hang_guard(LIMIT_S, name):
            outcome = refused(kind, name, argv, files)
    except Hang:
        outcome = hung(kind, name)
    return outcome, time.monotonic() - started


def one_line(outcome, code, *wanted):
    assert not outcome.get("hang"), f"{outcome['name']}: past {LIMIT_S} s"
    assert outcome["traceback"] is None, outcome["traceback"]
    assert (outcome["exit"], outcome["stderr_lines"]) == (code, 1), outcome
    assert outcome["created"] == [], outcome["created"]
    for text in wanted:
        assert text in outcome["stderr"], outcome["stderr"]


# ---------------------------------------------------------------------------------------------------------
# a port that is not Ray's

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(handle):
    """A listener on 127.0.0.1 that runs `handle(connection)` for each connection, in a thread; its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def loop():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(connection,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return server


def _silent(connection):
    time.sleep(30)
    connection.close()


def _hang_up(connection):
    connection.close()


def _ssh(connection):
    connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
    time.sleep(5)
    connection.close()


@pytest.fixture
def http_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


PEERS = {"an HTTP server": None, "a listener that never answers": _silent, "a listener that hangs up": _hang_up,
         "an SSH server": _ssh}


@pytest.mark.parametrize("how", ["--address", "RAY_ADDRESS", "--address auto with RAY_ADDRESS"])
@pytest.mark.parametrize("peer", list(PEERS))
def test_a_port_that_is_not_a_ray_head_is_one_line_within_10_s(refused, monkeypatch, http_port, peer, how):
    if PEERS[peer] is None:
        port, server = http_port, None
    else:
        server = _serve(PEERS[peer])
        port = server.getsockname()[1]
    address = f"127.0.0.1:{port}"
    argv = SWEEP + (["--address", "auto" if "auto" in how else address] if how.startswith("--address") else [])
    if "RAY_ADDRESS" in how:
        monkeypatch.setenv("RAY_ADDRESS", address)
    try:
        outcome, elapsed = within(refused, "waits", f"{how} at {peer}", argv, SPACE)
    finally:
        if server is not None:
            server.close()
    print(f"{how} at {peer}: {elapsed:.2f} s: {outcome['stderr'].strip()}")
    one_line(outcome, 2, address, "not a Ray cluster's head")


# ---------------------------------------------------------------------------------------------------------
# the trial log

LOG = "results/trial-logs/fz.jsonl"
NOT_A_LOG = {  # what results/trial-logs/fz.jsonl is, and what the line says
    "a FIFO": (lambda p: os.mkfifo(p), "a FIFO, not a regular file"),
    "a folder": (lambda p: p.mkdir(), "a folder, not a regular file"),
    "a link to /dev/zero": (lambda p: p.symlink_to("/dev/zero"), "a device, not a regular file"),
    "a link out of the folder": (lambda p: p.symlink_to(p.parent.parent.parent / "space.yaml"), "out of results/"),
}


@pytest.mark.parametrize("what", list(NOT_A_LOG))
def test_a_trial_log_that_is_no_regular_file_is_one_line_within_10_s(refused, tmp_path, what):
    log = tmp_path / "work" / LOG
    log.parent.mkdir(parents=True)
    NOT_A_LOG[what][0](log)
    outcome, elapsed = within(refused, "waits", f"trial log {what}", SWEEP, SPACE)
    print(f"trial log {what}: {elapsed:.2f} s: {outcome['stderr'].strip()}")
    one_line(outcome, 2, LOG, NOT_A_LOG[what][1])


def test_a_fifo_made_during_a_run_fails_the_append_at_once(tmp_path, monkeypatch):
    """A FIFO put in the log's place after the check: the append is a LogError, not a write that waits."""
    from sensitivity.sweep import trial_log
    monkeypatch.chdir(tmp_path)
    path = trial_log.log_path("fz")
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    with hang_guard(LIMIT_S, "append to a FIFO"), pytest.raises(trial_log.LogError, match="a FIFO"):
        trial_log.log_study(optuna.study.create_study(study_name="fz"))


# ---------------------------------------------------------------------------------------------------------
# the journal's lock

def _journal(path):
    """A journal holding one study, written without the fixture's forbidden create_study."""
    storage = open_storage(f"journal:{path}")
    storage.create_new_study([optuna.study.StudyDirection.MAXIMIZE], "old")
    return path


LOCKS = {  # what x.journal.lock is: no writer of x.journal made it, so no wait would end
    "a link to nothing": lambda work: os.symlink("/nonexistent", work / "x.journal.lock"),
    "a link to another file": lambda work: ((work / "other").write_text("x"),
                                            os.symlink(work / "other", work / "x.journal.lock")),
    "a relative link to nothing": lambda work: os.symlink("gone.journal", work / "x.journal.lock"),
    "a regular file": lambda work: (work / "x.journal.lock").write_text(""),
    "a folder": lambda work: (work / "x.journal.lock").mkdir(),
}


@pytest.mark.parametrize("journal_exists", [False, True], ids=["new journal", "existing journal"])
@pytest.mark.parametrize("what", list(LOCKS))
def test_a_lock_no_writer_holds_is_one_line_exit_1_within_10_s(refused, tmp_path, what, journal_exists):
    work = tmp_path / "work"
    if journal_exists:
        _journal(work / "x.journal")
    LOCKS[what](work)
    outcome, elapsed = within(refused, "waits", f"journal lock {what} ({'existing' if journal_exists else 'new'})",
                              SWEEP + ["--storage", "journal:x.journal"], SPACE)
    print(f"lock {what}: {elapsed:.2f} s: {outcome['stderr'].strip()}")
    one_line(outcome, 1, "journal lock x.journal.lock", "remove it")


@pytest.mark.parametrize("argv", [["defaults", "--frameworks", "torch", "--datasets", "digits"],
                                  ["crossover", "--framework", "torch", "--datasets", "digits-a,digits-b", "--default",
                                   "digits-a=caffe-lenet"]], ids=["defaults", "crossover"])
def test_every_command_that_writes_a_study_refuses_the_dangling_lock(refused, tmp_path, monkeypatch, argv):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "work" / "cache"))  # a parsed dataset is a write
    LOCKS["a link to nothing"](tmp_path / "work")
    outcome, _ = within(refused, "waits", f"{argv[0]}: journal lock a link to nothing",
                        argv + ["--storage", "journal:x.journal"], {})
    one_line(outcome, 1, "journal lock x.journal.lock", "remove it")


def test_the_grace_period_is_optunas():
    default = inspect.signature(optuna.storages.journal.JournalFileSymlinkLock).parameters["grace_period"].default
    assert journal_lock.GRACE_S == default == 30


@pytest.fixture
def short_grace(monkeypatch):
    monkeypatch.setattr(journal_lock, "GRACE_S", 1.5)
    return 1.5


def test_a_stale_lock_to_the_journal_is_broken_with_one_line(tmp_path, short_grace, capsys, caplog):
    """A driver killed while appending leaves FILE.lock -> FILE: broken once the journal has not changed for the
    grace period, with one line (Optuna printed "Retrying" every 10 s, then two warnings)."""
    journal = _journal(tmp_path / "x.journal")
    os.symlink(journal, tmp_path / "x.journal.lock")
    capsys.readouterr()
    started = time.monotonic()
    with hang_guard(LIMIT_S, "stale lock"):
        optuna.study.create_study(study_name="new", storage=open_storage(f"journal:{journal}"))
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    print(f"stale lock broken after {elapsed:.2f} s: {err.strip()}")
    assert err.count("\n") == 1 and "x.journal.lock was held for 1.5 s" in err and "broken" in err, err
    assert not [r for r in caplog.records if r.levelname == "WARNING"], caplog.records
    assert short_grace <= elapsed < LIMIT_S
    assert not (tmp_path / "x.journal.lock").exists()
    assert sorted(optuna.get_all_study_names(open_storage(f"journal:{journal}"))) == ["new", "old"]


def test_a_lock_a_live_writer_holds_is_waited_for_silently(tmp_path, short_grace, capsys):
    journal = _journal(tmp_path / "x.journal")
    lock = tmp_path / "x.journal.lock"
    os.symlink(journal, lock)
    threading.Timer(1.0, lock.unlink).start()  # the writer's append ends after 1 s
    capsys.readouterr()
    started = time.monotonic()
    with hang_guard(LIMIT_S, "live lock"):
        optuna.study.create_study(study_name="new", storage=open_storage(f"journal:{journal}"))
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < short_grace, elapsed
    assert capsys.readouterr().err == ""


def test_optunas_own_relative_link_from_another_folder_is_the_journals(tmp_path, short_grace, monkeypatch, capsys):
    """Optuna links to the path it was given: `sub/x.journal` from the folder above makes sub/x.journal.lock ->
    sub/x.journal, which leads nowhere from sub/. Taken as the journal's (from the current folder), and waited
    for as any live lock; this tool's own links are absolute."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    journal = _journal("sub/x.journal")
    os.symlink("sub/x.journal", "sub/x.journal.lock")
    journal_lock.check_lock(journal)  # no LockError
    with hang_guard(LIMIT_S, "relative lock"):
        optuna.study.create_study(study_name="new", storage=open_storage("journal:sub/x.journal"))
    assert "broken" in capsys.readouterr().err
