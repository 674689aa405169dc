"""The forecast a command makes before it launches: its runs' cells probed (or read from the cache), the trial
slots of the machine or cluster, and the estimate."""
from __future__ import annotations

import os

from sensitivity.forecast import overhead, throughput
from sensitivity.forecast.estimate import Forecast, forecast
from sensitivity.forecast.load import Load, others_now
from sensitivity.forecast.probe import STEPS
from sensitivity.forecast.runs import cluster_resources, runs_of_plan, runs_of_space, trial_slots


class ForecastError(ValueError):
    """A plan that cannot be forecast or run: one line saying what is missing."""


def run_device(options, fixed_device: str = "cpu") -> str:
    return "gpu" if options.gpus_per_trial else fixed_device


def run_threads(options, fixed_threads=None) -> int:
    return int(fixed_threads or max(1, int(options.cpus_per_trial)))


def sweep_runs(space, trials: int, options, plan=()) -> list:
    """A sweep's runs: its planned trials (--with-defaults), then the sampled ones from the space."""
    device = run_device(options, space.fixed.get("device", "cpu"))
    threads = run_threads(options, space.fixed.get("threads"))
    planned = runs_of_plan(list(plan), space.val_fraction, device, threads)
    sampled = runs_of_space(space, max(0, trials - len(planned)), device, threads) if trials > len(planned) else []
    return planned + sampled


def slots(options, ask_cluster: bool = True) -> int:
    """Trials at once on the machine or the cluster; ForecastError where no node holds one trial. Without
    `ask_cluster`, a cluster's slots are taken to be --parallel (the driver joins the cluster later)."""
    if options.address and not ask_cluster:
        return options.parallel
    resources = None
    if options.address:
        resources = cluster_resources(options.address)
        _check_nodes(options)
    found = trial_slots(options.parallel, options.cpus_per_trial, options.gpus_per_trial, resources)
    if found < 1:
        where = "the cluster" if options.address else "this machine"
        raise ForecastError(f"no node of {where} holds one trial of --cpus-per-trial {options.cpus_per_trial:g} "
                            f"--gpus-per-trial {options.gpus_per_trial:g}")
    return found


def _check_nodes(options) -> None:
    # lazy: ray
    import ray
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if not any(n.get("CPU", 0) >= options.cpus_per_trial and n.get("GPU", 0) >= options.gpus_per_trial
               for n in nodes):
        raise ForecastError(f"no node of the cluster holds one trial of --cpus-per-trial {options.cpus_per_trial:g} "
                            f"--gpus-per-trial {options.gpus_per_trial:g} (its {len(nodes)} nodes: "
                            + "; ".join(f"{n.get('CPU', 0):g} CPUs, {n.get('GPU', 0):g} GPUs" for n in nodes) + ")")


def forecast_of(runs: list, options, sampled: bool = False, probe: bool = True, steps: int = STEPS, log=None):
    """The Forecast of `runs` under `options`; with `probe` False, None unless the cache holds every cell."""
    cells = {r.cell for r in runs}
    found_slots = slots(options, ask_cluster=probe)  # a plan no node holds is refused before any probe
    local_ray = not (options.address or os.environ.get("RAY_ADDRESS"))
    beside = Load()  # other processes' load while the probe runs (a dry run's forecast is scaled by it)
    if probe:
        try:
            figures = throughput.measured(cells, options.address, options.gpus_per_trial, steps, log=log)
        except throughput.ProbeError as exc:
            raise ForecastError(str(exc)) from None
    else:
        figures = throughput.cached(cells)
        if len(figures) < len(cells):
            return None
    others = others_now(beside) if probe and local_ray else None  # the forecast kept before a run: a quiet one's
    return forecast(runs, figures, found_slots, options.cpus_per_trial, options.gpus_per_trial, sampled, local_ray,
                    overhead.read(local_ray), others)


__all__ = ["Forecast", "ForecastError", "forecast_of", "slots", "sweep_runs"]
