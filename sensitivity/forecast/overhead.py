"""What a sweep spends outside its trials' own time, measured on this host from its last sweep, for the next
forecast: <cache root>/throughput/<host>-overhead.json, one entry for a local Ray and one for a joined cluster.

- `before_s`: the command's start (its process) to its first trial's start: the interpreter and imports, the
  checks, Ray's start (a local one) and the Tune run's;
- `actor_s`: a trial slot's first trial, its span less its worker's (`env.worker.span_s`): the Tune actor's
  process and imports, and the node's keeper where the trial made it;
- `per_trial_s`: a later trial's span less its worker's, plus the gap to the trial before it on its slot: Tune's
  scheduling, the study's tell, the keeper's lending.

Until a sweep has run on this host, DEFAULTS stand in, and the forecast says so. Figures measured while other
processes kept the cores busy are divided by the slowdown that load gave the run (`load.slowdown`): a quiet
machine's, which a forecast scales by the load it finds.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import statistics
import time
from pathlib import Path

import psutil

from sensitivity.core.paths import cache_root
from sensitivity.forecast.load import Load, slowdown

DEFAULTS = {"before_s": 10.0, "actor_s": 4.0, "per_trial_s": 0.4}
_SINCE_START = Load(tree=True)  # other processes' load from this command's start (its import of the forecast)


def path(host: str = None) -> Path:
    return cache_root() / "throughput" / f"{host or socket.gethostname()}-overhead.json"


def read(local_ray: bool) -> tuple:
    """(figures, whether they were measured on this host) for a command that starts its own Ray or joins one."""
    try:
        entry = json.loads(path().read_text()).get("local" if local_ray else "cluster")
    except (OSError, ValueError, AttributeError):
        entry = None
    if not entry or any(not isinstance(entry.get(k), (int, float)) for k in DEFAULTS):
        return dict(DEFAULTS), False
    return {k: float(entry[k]) for k in DEFAULTS}, True


def measured(trials, command_started: float) -> dict:
    """The figures of one run from its completed trials (FrozenTrials recording `env.worker`) and the time its
    command's process started (a Unix time); {} where they cannot say."""
    done = sorted((t for t in trials if t.datetime_start and t.datetime_complete
                   and ((t.user_attrs.get("env") or {}).get("worker") or {}).get("span_s") is not None),
                  key=lambda t: t.datetime_start)
    if not done:
        return {}
    slots: dict = {}
    for t in done:
        slots.setdefault(t.user_attrs["env"].get("ray_actor_pid"), []).append(t)

    def outside(t) -> float:
        return (t.datetime_complete - t.datetime_start).total_seconds() - t.user_attrs["env"]["worker"]["span_s"]
    firsts = [run[0] for run in slots.values()]
    later = [outside(b) + max(0.0, (b.datetime_start - a.datetime_complete).total_seconds())
             for run in slots.values() for a, b in zip(run, run[1:])]
    figures = {"before_s": max(0.0, done[0].datetime_start.timestamp() - command_started),
               "actor_s": max(0.0, statistics.median(outside(t) for t in firsts))}
    if later:
        figures["per_trial_s"] = max(0.0, statistics.median(later))
    return figures


def record(figures: dict, local_ray: bool) -> None:
    """Keep a run's figures for the next forecast (those it could not measure stay as they were)."""
    if not figures:
        return
    target = path()
    try:
        entries = json.loads(target.read_text())
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}
    key = "local" if local_ray else "cluster"
    entries[key] = {**DEFAULTS, **(entries.get(key) or {}), **{k: round(v, 3) for k, v in figures.items()}}
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(entries, indent=1, sort_keys=True))
    temporary.replace(target)


def keep_run(study, driver_id: str, trials: int, local_ray: bool) -> None:
    """After a run of `trials` trials by driver `driver_id`: the study keeps its wall time from the command's start
    (`last_run`, which the report sets beside the forecast, with the cores other processes kept busy meanwhile),
    and this host its overheads for the next forecast, brought back to a quiet machine's where other processes
    kept the cores busy during the run (divided by `load.slowdown`)."""
    started = psutil.Process().create_time()
    try:
        others = _SINCE_START.others() if local_ray else None
        study.set_user_attr("last_run", {"wall_s": round(time.time() - started, 3), "trials": trials,
                                         **({"others_cores": round(others, 2)} if others is not None else {})})
        ran = [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get("driver") == driver_id]
        # the threads from the worker's env: the driver's copy of a trial has no spec (driver_storage.NOT_CACHED)
        threads = max(((t.user_attrs.get("env") or {}).get("threads_requested") or 1 for t in ran), default=1)
        factor = slowdown(max((t.user_attrs.get("parallel") or 1 for t in ran), default=1), threads, others)
        record({k: v / factor for k, v in measured(ran, started).items()}, local_ray)
    except Exception as exc:  # a figure for the next forecast: never a reason to fail a run whose trials are final
        logging.getLogger(__name__).warning("the run's wall time and overheads were not kept: %s", exc)
