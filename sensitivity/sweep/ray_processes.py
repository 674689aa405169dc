"""Ray's processes for one driver: start (local or a cluster address), and clean up after a killed driver.

A driver killed with SIGKILL cannot stop the local Ray it started (raylet, GCS, workers). Each driver
records the processes its local Ray started, with their start times, in results/ray-processes/; the
next driver ends those still alive whose recorder is gone, by process id (never `ray stop`, which would
stop every Ray on the machine).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path

import psutil

RECORDS = Path("results") / "ray-processes"
OBJECT_STORE_BYTES = 80 * 2**20  # Ray's minimum is 78 MiB; trials pass no large objects


def tune_dir() -> str:
    path = Path("results") / "ray-tune"
    path.mkdir(parents=True, exist_ok=True)
    return str(path.resolve())


def init_ray(address=None) -> None:
    """Start a local Ray, or join the cluster at `address`; Ray reads these variables when imported."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    # A cluster started with Ray's token authentication (Ray 2.60's default) admits token clients only.
    if address and ((Path.home() / ".ray" / "auth_token").exists() or os.environ.get("RAY_AUTH_TOKEN")):
        os.environ.setdefault("RAY_AUTH_MODE", "token")
    import ray

    if address:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
        return
    # a short temporary folder: Ray's socket paths must stay under the 107-byte limit
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES, _temp_dir=temp_dir,
             log_to_driver=False, configure_logging=False)
    _record_own()


def started() -> bool:
    """Whether this process has a Ray up (without importing Ray, which reads its environment then)."""
    ray = sys.modules.get("ray")
    return ray is not None and ray.is_initialized()


def watch_local_ray(interval_s: float = 2.0):
    """End this driver, with one line, if the local Ray it started loses its GCS server or raylet (killed,
    out of memory): Tune would otherwise retry forever. The study keeps every told trial; the trials left
    running become orphans that the next run of the same command retries. Returns a function that stops
    the watch (before ray.shutdown, which ends those processes on purpose). A no-op on a cluster."""
    core = [(p.name(), p) for p in psutil.Process().children(recursive=True) if p.name() in ("gcs_server", "raylet")]
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


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _record_path() -> Path:
    return RECORDS / f"{os.getpid()}.json"


def _record_own() -> None:
    me = psutil.Process()
    children = [{"pid": p.pid, "created": p.create_time()} for p in me.children(recursive=True)]
    RECORDS.mkdir(parents=True, exist_ok=True)
    record = {"driver": {"pid": me.pid, "created": me.create_time()}, "processes": children}
    _record_path().write_text(json.dumps(record))


def forget_own() -> None:
    _record_path().unlink(missing_ok=True)


def clean_up_leftovers() -> list:
    """End the Ray processes of drivers that are gone; returns the pids ended."""
    ended = []
    for path in sorted(RECORDS.glob("*.json")) if RECORDS.exists() else []:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        if _alive(record["driver"]):
            continue
        for proc in record["processes"]:
            if _alive(proc):
                try:
                    os.kill(proc["pid"], signal.SIGKILL)
                    ended.append(proc["pid"])
                except ProcessLookupError:
                    pass
        path.unlink(missing_ok=True)
    return ended


def _alive(proc: dict) -> bool:
    """The same process (pid and start time) is still running."""
    try:
        return abs(psutil.Process(proc["pid"]).create_time() - proc["created"]) < 0.01
    except psutil.NoSuchProcess:
        return False
