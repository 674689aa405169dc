"""The machine's load beside a forecast, and what it does to a local sweep's wall time.

`Load` reads, over a span, the CPU time every other process used (the machine's busy CPU seconds, less those of
this process and of its descendants), in cores kept busy on average. The probe takes it beside itself (a probe
under load is not the host's speed: `throughput`); a dry run takes it while it forecasts; a sweep takes it over
its run, so that the overheads it leaves for the next forecast are those of a quiet machine (`overhead`).

`slowdown` is the model that turns it into time. Linux's scheduler gives every busy thread an equal share of
the cores: a sweep whose trials and driver keep `own` cores busy, beside other processes keeping `others` busy on
`cores` cores, runs (own + others) / cores times as long as it would alone once that exceeds 1 (and as long where
it does not: one busy process beside a one-slot sweep on two cores costs it little). `own` is its trial slots'
CPUs plus DRIVER_CORES for the driver and Ray's processes beside the trials.
"""
from __future__ import annotations

import os
import time
from typing import Optional

import psutil

DRIVER_CORES = 0.25  # the driver and Ray's processes beside a local sweep's trials, on average


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Load:
    """Other processes' CPU over the span from its making to `others()` (see the module). With `tree`, the CPU of
    this process's descendants alive at the end counts as its own (a sweep's Ray processes and workers)."""

    def __init__(self, tree: bool = False):
        self.tree = tree
        self.started = time.perf_counter()
        self._machine, self._mine = _machine_busy(), self._own()

    def _own(self) -> float:
        me = psutil.Process()
        total = _cpu(me)
        if self.tree:
            for child in me.children(recursive=True):
                try:
                    total += _cpu(child)
                except psutil.Error:  # ended meanwhile
                    pass
        return total

    def others(self) -> float:
        """Cores kept busy by other processes since this object was made, on average."""
        span = time.perf_counter() - self.started
        if span <= 0:
            return 0.0
        return max(0.0, (_machine_busy() - self._machine) - (self._own() - self._mine)) / span


def _machine_busy() -> float:
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def others_now(load: Optional[Load] = None, least_s: float = 1.0) -> float:
    """Other processes' busy cores since `load` was made (now, without one), over `least_s` seconds at least."""
    load = load or Load()
    left = least_s - (time.perf_counter() - load.started)
    if left > 0:
        time.sleep(left)
    return load.others()


def slowdown(slots: int, cpus_per_trial: float, others: Optional[float], cores: Optional[int] = None) -> float:
    """How many times longer a local sweep of `slots` trials of `cpus_per_trial` CPUs runs beside other processes
    keeping `others` cores busy than alone (see the module); 1 without a measure."""
    if not others:
        return 1.0
    cores = cores or usable_cores()
    own = slots * cpus_per_trial + DRIVER_CORES
    return max(1.0, (own + others) / cores) / max(1.0, own / cores)
