"""Throughput figures of probe cells, measured once per host and framework version and then read from the
cache: <cache root>/throughput/<host>.json, one entry per cell and installed framework version. A probe beside
which other processes kept more than `probe.LOADED_CORES` busy (`load_beside`, measured by the probe) is used
for the forecast it was made for, which says so, and not cached: a busy moment is not the host's speed.

`measured(cells)` runs the cells it does not hold (one probe process per framework environment, so that a
framework is imported once), here or, given a Ray cluster's address, as one Ray task per environment on a
node with the trial's resources, and returns every cell's figures.
"""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from sensitivity import frameworks
from sensitivity.core import envs
from sensitivity.core.paths import atomic_write, cache_root
from sensitivity.core.spec import TrialSpec
from sensitivity.forecast.probe import STEPS, Cell, loaded
from sensitivity.ray_cluster import joined
from sensitivity.trial.pool import pool_key
from sensitivity.trial.runner import worker_setup

PROBE_TIMEOUT_S = 1800.0  # one environment's probe process, every cell of it


class ProbeError(RuntimeError):
    """A probe that could not run; one line naming the framework and why."""


def cache_path(host: str = None) -> Path:
    return cache_root() / "throughput" / f"{host or socket.gethostname()}.json"


def _version(framework: str) -> str:
    return str(frameworks.probe(framework)[0])


def _entry_key(cell: Cell) -> str:
    return f"{_version(cell.framework)}|{cell.key()}"


def read_cache(host: str = None) -> dict:
    try:
        return json.loads(cache_path(host).read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(entries: dict, host: str = None) -> None:
    with atomic_write(cache_path(host)) as file:
        file.write(json.dumps(entries, indent=1, sort_keys=True).encode())


def cached(cells, steps: int = 1) -> dict:
    """The cached figures of those `cells` the cache holds from a probe of `steps` steps or more, by cell (an
    entry from before the probe timed cold starts, or its steps in blocks, is probed again)."""
    entries = read_cache()
    found = {cell: entries.get(_entry_key(cell)) for cell in cells}
    return {cell: entry for cell, entry in found.items()
            if entry and entry.get("requested_steps", 0) >= steps and "cold_start_s" in entry and "blocks" in entry}


def measured(cells, address=None, gpus=0.0, steps: int = STEPS, log=None) -> dict:
    """Every cell's figures ({cell: dict}), probing those the cache lacks; ProbeError where a probe fails."""
    cells = sorted(set(cells), key=lambda c: c.key())
    found = cached(cells, steps)
    missing = [c for c in cells if c not in found]
    groups = defaultdict(list)
    for cell in missing:
        groups[_environment(cell)].append(cell)
    for (env, variables), group in groups.items():
        if log:
            log(f"probing {len(group)} cell{'s' if len(group) != 1 else ''} of {group[0].framework} "
                f"({steps} steps each)")
        lines = (_remote(env, dict(variables), group, steps, address, gpus) if address
                 else run_probe(env, dict(variables), [c.key() for c in group], steps))
        for cell, line in zip(group, lines):
            if "error" in line:
                raise ProbeError(f"probe of {cell.framework} ({cell.model}, batch {cell.batch_size}, {cell.device}): "
                                 f"{line['error']}")
            found[cell] = line
    quiet = [c for c in missing if not loaded(found[c])]
    if quiet:
        entries = read_cache()
        entries.update({_entry_key(c): found[c] for c in quiet})
        _write_cache(entries)
    return found


def _environment(cell: Cell) -> tuple:
    """(environment, sorted start-up variables) of the probe of `cell`: those of a trial's worker
    (`worker_setup`) of its framework, backend and threads."""
    spec = TrialSpec(framework=cell.framework, dataset="probe", backend=cell.backend or None, threads=cell.threads)
    return pool_key(*worker_setup(spec))


def run_probe(env: str, variables: dict, keys: list, steps: int = STEPS) -> list:
    """Run the probe of `keys` (Cell keys) in a process of the environment `env`; its JSON lines."""
    if not envs.is_available(env):
        raise ProbeError(f"the {env} environment is not set up here ({envs.interpreter(env)}): scripts/setup.sh")
    try:
        done = subprocess.run([str(envs.interpreter(env)), "-m", "sensitivity.forecast.probe"],
                              input=json.dumps({"cells": keys, "steps": steps}), capture_output=True, text=True,
                              env=envs.worker_environ(env, variables), timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProbeError(f"the {env} probe took more than {PROBE_TIMEOUT_S:.0f} s") from None
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(lines) != len(keys):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ProbeError(f"the {env} probe ended with code {done.returncode}: {tail}")
    return lines


def _remote(env: str, variables: dict, cells: list, steps: int, address: str, gpus: float) -> list:
    """The probe as one Ray task on the cluster at `address`, on a node with the trial's resources (Ray is
    imported here only: the probe itself never imports it)."""

    ray = joined(address)
    task = ray.remote(num_cpus=max(c.threads for c in cells), num_gpus=gpus)(run_probe)
    return ray.get(task.remote(env, variables, [c.key() for c in cells], steps), timeout=PROBE_TIMEOUT_S)


if __name__ == "__main__":  # the cache of this host, for a look
    json.dump(read_cache(), sys.stdout, indent=1)
