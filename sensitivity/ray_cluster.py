"""Ray's processes for one driver: start (local or a cluster address), and clean up after a killed driver.

A local Ray listens on the loopback interface only: its node address is 127.0.0.1, so its GCS, raylet,
workers, runtime-env agent and autoscaler metrics bind there (README, "Sweeps", lists them); the dashboard is
off. It keeps its files in a temporary folder of its own (/tmp/ray-XXXX/r, which Ray makes world-writable,
inside /tmp/ray-XXXX at 0700, which no one else can enter; the folders Ray has made lose their group and other
write bits when it is up, and again every half second while the sweep runs, by the reaper), removed when it
stops.

A driver killed with SIGKILL cannot stop the local Ray it started (raylet, GCS, agents, workers, and the
framework workers of its trials). A reaper process, started with the local Ray in a session of its own,
follows the driver: within a second of the driver's end it kills every process the driver started (those
it saw, and their descendants at that moment) and removes the temporary folder. Should the reaper die too,
the record each driver keeps in results/ray-processes/ lets the next driver end those processes, by
process id (never `ray stop`, which would stop every Ray on the machine), and remove the folder.
"""
from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from sensitivity import private_apis

RECORDS = Path("results") / "ray-processes"
OBJECT_STORE_BYTES = 80 * 2**20  # Ray's minimum is 78 MiB; trials pass no large objects
REAP_INTERVAL_S = 0.5
RAY_TEMP = "r"  # Ray's temp folder, inside the driver's private one
_local_ray: dict = {}  # the local Ray this process started: its temporary folder and its reaper


def init_ray(address=None) -> None:
    """Start a local Ray, or join the cluster at `address`; Ray reads these variables when imported."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # A cluster started with Ray's token authentication (Ray 2.60's default) admits token clients only; a local
    # Ray turns it on where a token exists, and says so on stderr unless the mode is given (it is: token). Ray
    # reads the mode when imported: given after that, the driver would not send the token its own GCS asks for
    token = (Path.home() / ".ray" / "auth_token").exists() or os.environ.get("RAY_AUTH_TOKEN")
    if token and (address or "ray" not in sys.modules):
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    # lazy: ray
    import ray

    private_apis.set_ray_cluster_mode(bool(address))  # False: a local Ray's node address stays 127.0.0.1
    if address:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
        return
    # A short temporary folder (Ray's socket paths must stay under the 107-byte limit), 0700. Ray makes its
    # own temp folder and every one under it 0777, so that lives one level down, where no one else can reach.
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    _local_ray.update(temp_dir=temp_dir, reaper=_start_reaper(temp_dir))
    try:
        ray.init(include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES, log_to_driver=False,
                 configure_logging=False, **private_apis.local_ray_init_kwargs(os.path.join(temp_dir, RAY_TEMP)))
    except BaseException:
        stopped()
        raise
    tighten(temp_dir)
    _record_own(temp_dir)


def tighten(root: str) -> None:
    """Take the write permission of group and others off every folder under `root`: Ray makes its folders
    0777 (no sticky bit), which the 0700 `root` already keeps others out of; this keeps them out of each."""
    for folder, _, _ in os.walk(root):
        try:
            mode = os.lstat(folder).st_mode
            if mode & 0o022:
                os.chmod(folder, mode & ~0o022 & 0o7777)
        except OSError:  # a folder Ray removed meanwhile
            pass


def joined(address: str):
    """The `ray` module, joined to the cluster at `address` (by `init_ray`, before Ray is first imported: it
    reads the token mode from the environment then) unless this process already has a Ray."""
    if "ray" not in sys.modules or not sys.modules["ray"].is_initialized():
        init_ray(address)
    # lazy: ray
    import ray
    return ray


def stopped() -> None:
    """After ray.shutdown(): remove the local Ray's folder and record, and end its reaper."""
    reaper = _local_ray.pop("reaper", None)
    if reaper is not None:
        reaper.kill()
        reaper.wait()
    temp_dir = _local_ray.pop("temp_dir", None)
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)
    if RECORDS.is_dir():  # none where the run was refused before it wrote
        _record_path().unlink(missing_ok=True)


def _start_reaper(temp_dir: str) -> subprocess.Popen:
    me = psutil.Process()
    command = [sys.executable, "-m", "sensitivity.ray_cluster", str(me.pid), repr(me.create_time()), temp_dir]
    # its own session (Ctrl-C goes to the driver alone), and no hold on the driver's output pipes
    return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def reap(driver: dict, temp_dir: str, interval_s: float = REAP_INTERVAL_S) -> None:
    """The reaper's loop: follow the driver's descendants while it lives, and keep the folders Ray makes as the
    driver set them (`tighten`: Ray's agents make theirs 0777 after the driver's start, and Ray makes a folder
    for each runtime environment and worker later); once the driver is gone, kill those still running and
    whatever they started since, then remove `temp_dir`."""
    seen = {}
    me = os.getpid()
    while _alive(driver):
        try:
            seen.update({p.pid: p.create_time() for p in psutil.Process(driver["pid"]).children(recursive=True)
                         if p.pid != me})
        except psutil.Error:
            pass
        tighten(temp_dir)
        time.sleep(interval_s)
    _kill_all([{"pid": pid, "created": created} for pid, created in seen.items()])
    shutil.rmtree(temp_dir, ignore_errors=True)


def _kill_all(processes: list) -> list:
    """SIGKILL the processes still running (same pid and start time) and their descendants; returns
    the pids ended."""
    targets = {}
    for proc in processes:
        if _alive(proc):
            try:
                process = psutil.Process(proc["pid"])
                targets.update({p.pid: p for p in [process, *process.children(recursive=True)]})
            except psutil.NoSuchProcess:
                pass
    for process in targets.values():
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return list(targets)


RAY_LISTENER = "ray_listen_error_messages"  # the driver thread that prints Ray's error messages to stdout


class _Aside:
    """A stream that passes all writes but those of Ray's error listener, which go to `path`."""

    def __init__(self, stream, path: Path):
        self.stream, self.path = stream, path

    def write(self, text: str) -> int:
        if threading.current_thread().name != RAY_LISTENER:
            return self.stream.write(text)
        with open(self.path, "a", encoding="utf-8", errors="backslashreplace") as aside:
            return aside.write(text)

    def __getattr__(self, name):
        return getattr(self.stream, name)


class _DropToldTrials(logging.Filter):
    """Tune's closing notes on trials the searcher has told the study about, each in its own words: "Trials did
    not complete: [...]", and "Failed to fetch metrics" for a trial stopped before its first report (the driver
    reads no metrics of Tune's: the study holds them)."""

    LOGGERS = ("ray.tune.tune", "ray.tune.analysis.experiment_analysis")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(("Trials did not complete", "Failed to fetch metrics"))


class _WriteFaults(logging.Filter):
    """Tune's logged failures to write its files (its experiment state, synced to the run's folder: a traceback
    each time, with the error attached or written into the message). One whose error says the folder takes no
    more writes (`FOLDER_FULL`: a full disk, a quota, a read-only or forbidden folder) is a fault of the folder,
    not of the trials: it goes to `on_fault` (one line's text naming `folder`) instead of being logged. Any other
    (a file Tune's own sync found gone: ENOENT, once in CI) is a one-line warning without the traceback, and the
    sweep goes on: Tune writes its state again at its next sync, and the study holds every trial."""

    LOGGERS = private_apis.TUNE_WRITE_LOGGERS
    ERRNO = re.compile(r"\[Errno (\d+)\]")
    FOLDER_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})

    def __init__(self, on_fault, folder: Path):
        super().__init__()
        self.on_fault, self.folder = on_fault, folder

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        error = record.exc_info[1] if record.exc_info else None
        number = error.errno if isinstance(error, OSError) else None
        if number is None:
            found = self.ERRNO.search(record.getMessage())
            if found is None:
                return True
            number = int(found.group(1))
        if number in self.FOLDER_FULL:
            self.on_fault(f"Ray Tune's folder {self.folder} cannot be written ({os.strerror(number)})")
            return False
        record.msg, record.args = (f"Ray Tune could not save its files in {self.folder} ({os.strerror(number)}); "
                                   "it saves them again at its next sync, and the study holds every trial"), ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = record.stack_info = None
        return True


@contextlib.contextmanager
def ray_text_aside(path: Path, on_write_fault=None):
    """While a sweep runs: Ray's own messages about its workers ("(raylet) A worker died ...", which the driver
    prints to stdout from a thread of its own) go to `path`, so that stdout holds the tool's output alone, and
    Tune's notes on unfinished trials are not logged (the study says what became of each); with `on_write_fault`,
    nor are its failures to write its files in `path`'s folder (a full disk), which go to it instead
    (`_WriteFaults`)."""
    streams = (sys.stdout, sys.stderr)
    filters = (_DropToldTrials(),) + ((_WriteFaults(on_write_fault, path.parent),) if on_write_fault else ())
    sys.stdout, sys.stderr = _Aside(sys.stdout, path), _Aside(sys.stderr, path)
    for quiet in filters:
        for name in quiet.LOGGERS:
            logging.getLogger(name).addFilter(quiet)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams
        for quiet in filters:
            for name in quiet.LOGGERS:
                logging.getLogger(name).removeFilter(quiet)


def started() -> bool:
    """Whether this process has a Ray up (without importing Ray, which reads its environment then)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def watch_local_ray(interval_s: float = 2.0):
    """End this driver, with one line, if the local Ray it started loses its GCS server or raylet (killed,
    out of memory): Tune would otherwise retry forever. The study keeps every told trial; the trials left
    running become orphans that the next run of the same command retries. Returns a function that stops
    the watch (before ray.shutdown, which ends those processes on purpose). A no-op on a cluster."""
    children = psutil.Process().children(recursive=True)
    core = [(name, p) for name, p in _named(children) if name in ("gcs_server", "raylet")]
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(interval_s):
            dead = [name for name, process in core if not _running(process)]
            if dead and not stop.is_set():
                print(f"sensitivity: the local Ray stopped ({', '.join(dead)} ended); finished trials are in the "
                      "study: run the same command again to resume", file=sys.stderr, flush=True)
                os._exit(1)

    if core:
        threading.Thread(target=watch, daemon=True, name="ray-watch").start()
    return stop.set


def watch_cluster_head(on_lost, interval_s: float = 2.0, misses: int = 4):
    """End this driver, with one line, once the cluster's head (its GCS) has not answered a TCP connection
    `misses` times in a row: Ray's own end comes 60 s later, with a C++ line, leaving the trials RUNNING.
    `on_lost()` runs first (the searcher fails its live trials as orphans and queues them again). Returns a
    function that stops the watch."""
    # lazy: ray
    import ray

    host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
    stop = threading.Event()

    def answers() -> bool:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=interval_s):
                return True
        except (OSError, ValueError):
            return False

    def watch() -> None:
        missed = 0
        while not stop.wait(interval_s):
            missed = 0 if answers() else missed + 1
            if missed >= misses and not stop.is_set():
                try:
                    on_lost()
                finally:
                    print(f"sensitivity: the Ray cluster's head at {host}:{port} stopped answering; finished trials "
                          "are in the study and the running ones are queued again: restart the head (ray start "
                          "--head) and its nodes, then run the same command again", file=sys.stderr, flush=True)
                    os._exit(1)

    threading.Thread(target=watch, daemon=True, name="ray-head-watch").start()
    return stop.set


def _named(processes) -> list:
    """(name, process) of each of `processes` still running: one that ends meanwhile (a Ray worker that
    exits between the listing and the read) is left out, not raised."""
    named = []
    for process in processes:
        try:
            named.append((process.name(), process))
        except psutil.NoSuchProcess:
            pass
    return named


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _record_path() -> Path:
    return RECORDS / f"{os.getpid()}.json"


def _record_own(temp_dir: str) -> None:
    me = psutil.Process()
    children = [{"pid": p.pid, "created": p.create_time()} for p in me.children(recursive=True)]
    RECORDS.mkdir(parents=True, exist_ok=True)
    record = {"driver": {"pid": me.pid, "created": me.create_time()}, "processes": children, "temp_dir": temp_dir}
    _record_path().write_text(json.dumps(record))


def clean_up_leftovers() -> list:
    """End the Ray processes of drivers that are gone and remove their folders; returns the pids ended."""
    ended = []
    for path in sorted(RECORDS.glob("*.json")) if RECORDS.exists() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        if _alive(record["driver"]):
            continue
        ended += _kill_all(record["processes"])
        if str(record.get("temp_dir", "")).startswith("/tmp/ray-"):
            shutil.rmtree(record["temp_dir"], ignore_errors=True)
        path.unlink(missing_ok=True)
    return ended


def _alive(proc: dict) -> bool:
    """The same process (pid and start time) is still running."""
    try:
        return abs(psutil.Process(proc["pid"]).create_time() - proc["created"]) < 0.01
    except psutil.NoSuchProcess:
        return False


if __name__ == "__main__":  # the reaper: python -m sensitivity.ray_cluster DRIVER_PID CREATED TEMP_DIR
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the driver, which stops Ray and then this
    reap({"pid": int(sys.argv[1]), "created": float(sys.argv[2])}, sys.argv[3])
