"""The forecast of a plan: each trial's train time from the probe's seconds per step, its evaluation and
compile beside it, summed per framework, dataset and device, and the run's core-hours, GPU-hours, energy
(where the probe read a GPU's energy counter) and wall time on the slots the cluster gives.

Wall time packs the trials onto the slots, longest first, each trial's train, evaluation and compile plus the
per-trial overhead; on each slot the first trial of a framework also pays that framework's cold start (the
probe's `cold_start_s`: its worker's interpreter and the framework's import), once per slot, since the keeper
keeps workers warm (`sweep.keeper`). Before the trials come the command's start (its checks, a local Ray's start,
the Tune run's) and each slot's actor. Those overheads are this host's, measured on its last sweep
(`forecast.overhead`), or defaults until one has run, and the forecast says which. All of these are a quiet
machine's figures (the probe's fastest blocks; overheads measured under load brought back to a quiet machine's);
where other processes keep this machine's cores busy while a local sweep is forecast, its wall time is scaled by
the share of the cores it would get beside them (`forecast.load`), and the forecast says so.

A planned trial's steps are known (`iterations`). A sampled sweep's are not: its trials are forecast from the
space's distribution (SAMPLES draws, each weighed trials / SAMPLES), and the forecast says so. Diverged runs
stop early: a forecast is of every run reaching its budget, an upper bound where some diverge.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from sensitivity.forecast.load import slowdown, usable_cores
from sensitivity.forecast.overhead import DEFAULTS
from sensitivity.forecast.probe import Cell, loaded

SAMPLES = 2000  # draws of a sampled space's distribution


@dataclass(frozen=True)
class Run:
    """One trial (or, with `count`, that many alike) as the forecast sees it."""
    cell: Cell
    dataset: str
    steps: int  # optimizer steps of the whole run
    epochs: int  # evaluations: one after each epoch
    eval_samples: int  # validation and test samples evaluated after each epoch
    count: float = 1.0
    status: str = "run"  # or "not run: files absent"
    label: str = ""  # the default's name, or "sampled"


@dataclass
class Forecast:
    rows: list  # per framework, dataset, device and status: trials, epochs, train_s, wall_s
    train_s: float  # summed train time of the trials that run
    wall_trial_s: float  # summed wall time of those trials (train, per-epoch evaluation, compile)
    core_hours: float
    gpu_hours: float
    energy_kwh: object  # None where no GPU energy counter was read
    wall_s: float  # the run's wall time on `slots` trials at once, start-ups and Ray's start included
    slots: int
    sampled: bool
    notes: list = field(default_factory=list)
    startup_s: float = 0.0  # the workers' cold starts, summed over the slots
    before_s: float = 0.0  # the command's start to its first trial's, and each slot's actor
    slowdown: float = 1.0  # the wall time's factor for the load other processes put on this machine (`load`)

    def attrs(self) -> dict:
        """What a study keeps of the forecast made before it ran."""
        return {"train_s": round(self.train_s, 3), "wall_s": round(self.wall_s, 3),
                "core_hours": round(self.core_hours, 4), "gpu_hours": round(self.gpu_hours, 4),
                "energy_kwh": None if self.energy_kwh is None else round(self.energy_kwh, 6),
                "slots": self.slots, "sampled": self.sampled, "startup_s": round(self.startup_s, 3),
                "before_s": round(self.before_s, 3), "slowdown": round(self.slowdown, 3),
                "trials": round(sum(r["trials"] for r in self.rows if r["status"] == "run"), 3)}


def trial_seconds(run: Run, figures: dict) -> tuple:
    """(train seconds, wall seconds) of one run from its cell's probe figures."""
    train = run.steps * figures["step_s"]
    evaluation = (run.epochs * run.eval_samples) / figures["eval_samples_per_s"]
    return train, train + evaluation + figures["compile_s"]


def forecast(runs: list, figures: dict, slots: int, cpus_per_trial: float = 1, gpus_per_trial: float = 0,
             sampled: bool = False, local_ray: bool = True, overhead: tuple = None,
             others: Optional[float] = None) -> Forecast:
    """The forecast of `runs` from the probe's `figures` ({cell: dict}) on `slots` trials at once; `local_ray`:
    the command starts a Ray of its own; `overhead`: (`forecast.overhead` figures, whether measured here);
    `others`: the cores other processes kept busy on this machine while the forecast was made (a local sweep's
    wall time is scaled by `load.slowdown`, assuming they go on)."""
    costs, measured_here = overhead or (dict(DEFAULTS), False)
    rows, jobs, energy, has_energy = {}, {}, 0.0, False
    train_total = wall_total = 0.0
    cold = {}
    for run in runs:
        train, wall = trial_seconds(run, figures[run.cell])
        key = (run.cell.framework, run.dataset, run.cell.device, run.status)
        row = rows.setdefault(key, {"framework": key[0], "dataset": key[1], "device": key[2], "status": key[3],
                                    "trials": 0.0, "epochs": set(), "train_s": 0.0, "wall_s": 0.0})
        row["trials"] += run.count
        row["epochs"].add(run.epochs)
        row["train_s"] += train * run.count
        row["wall_s"] += wall * run.count
        if run.status != "run":
            continue
        train_total += train * run.count
        wall_total += wall * run.count
        framework = jobs.setdefault(run.cell.framework, {"walls": [], "count": 0.0, "seconds": 0.0})
        framework["walls"] += [wall + costs["per_trial_s"]] * max(1, round(run.count))
        framework["count"] += run.count
        framework["seconds"] += (wall + costs["per_trial_s"]) * run.count
        cold[run.cell.framework] = max(cold.get(run.cell.framework, 0.0), figures[run.cell].get("cold_start_s") or 0.0)
        joules = figures[run.cell].get("joules_per_step")
        if joules is not None:
            has_energy = True
            energy += joules * run.steps * run.count
    walls, startup = [], 0.0
    for name, framework in jobs.items():
        if sampled:  # alike trials of the framework's expected mean: the makespan of equal jobs
            count = math.ceil(framework["count"])
            framework["walls"] = [framework["seconds"] / framework["count"]] * count if count else []
        starts = min(slots, len(framework["walls"]))
        framework["walls"][:starts] = [w + cold[name] for w in framework["walls"][:starts]]
        startup += starts * cold[name]
        walls += framework["walls"]
    notes = []
    busy = sorted({round(f["load_beside"], 1) for f in figures.values() if loaded(f)})
    if busy:
        notes.append(f"probe: taken while other processes kept {busy[-1]:g} of this machine's {usable_cores()} cores "
                     "busy: steps timed by their fastest block, and the figures used for this forecast only (not "
                     "cached as this host's speed)")
    factor = slowdown(slots, cpus_per_trial, others) if local_ray else 1.0
    if factor > 1.0:
        notes.append(f"load: other processes kept {others:.1f} of this machine's {usable_cores()} cores busy while "
                     f"this forecast was made; if they go on, the sweep shares the cores with them: wall time "
                     f"{factor:.2f} times a quiet machine's (included)")
    if sampled:
        notes.append(f"sampled: forecast from the space's distribution ({SAMPLES:,} draws), not from the "
                     "configurations the sampler will choose")
    if not has_energy:
        notes.append("energy: not forecast (no GPU energy counter was read by the probe; NVML is needed)")
    if not local_ray and startup:
        notes.append("start-ups counted cold: on a cluster whose workers are warm (an earlier command's) they are "
                     "not paid")
    notes.append("overheads: " + ("measured on this host's last sweep" if measured_here else
                                  "defaults, until a sweep has run on this host")
                 + f" ({costs['before_s']:.1f} s before the first trial, {costs['actor_s']:.1f} s each slot's actor, "
                 f"{costs['per_trial_s']:.2f} s a trial)")
    before = costs["before_s"] + costs["actor_s"] if walls else 0.0
    return Forecast(rows=[{**r, "epochs": sorted(r["epochs"])} for r in rows.values()], train_s=train_total,
                    wall_trial_s=wall_total, core_hours=wall_total * cpus_per_trial / 3600,
                    gpu_hours=wall_total * gpus_per_trial / 3600,
                    energy_kwh=energy / 3.6e6 if has_energy else None,
                    wall_s=(makespan(walls, slots) + before) * factor, slots=slots, sampled=sampled, notes=notes,
                    startup_s=startup, before_s=before, slowdown=factor)


def makespan(seconds: list, slots: int) -> float:
    """Wall time of jobs taken longest first by the first free of `slots` (Graham's LPT)."""
    free = [0.0] * max(1, slots)
    for job in sorted(seconds, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + job)
    return max(free)


def _epochs_text(epochs: list) -> str:
    return ", ".join(str(e) for e in epochs) if len(epochs) <= 4 else f"{epochs[0]}-{epochs[-1]}"


def text(result: Forecast, heading: str) -> str:
    """The plan and its forecast, as printed by --dry-run."""
    lines = [heading, f"{'framework':<12} {'dataset':<10} {'device':<6} {'trials':>8} {'epochs each':<14} "
             f"{'train':>10} {'wall':>10}  status"]
    for row in sorted(result.rows, key=lambda r: (r["status"] != "run", r["dataset"], r["framework"], r["device"])):
        trials = f"{row['trials']:.0f}" if float(row["trials"]).is_integer() else f"{row['trials']:.1f}"
        lines.append(f"{row['framework']:<12} {row['dataset']:<10} {row['device']:<6} {trials:>8} "
                     f"{_epochs_text(row['epochs']):<14} {duration(row['train_s']):>10} {duration(row['wall_s']):>10}"
                     f"  {row['status']}")
    run = [r for r in result.rows if r["status"] == "run"]
    lines.append(f"total (runs): {sum(r['trials'] for r in run):.0f} trials, train {duration(result.train_s)} summed, "
                 f"{result.core_hours:.3g} core-hours, {result.gpu_hours:.3g} GPU-hours, "
                 f"energy {'not forecast' if result.energy_kwh is None else f'{result.energy_kwh:.3g} kWh'}, "
                 f"wall {duration(result.wall_s)} on {result.slots} slot{'s' if result.slots != 1 else ''} "
                 f"(worker start-ups {duration(result.startup_s)} summed, {duration(result.before_s)} before the trials)")
    absent = [r for r in result.rows if r["status"] != "run"]
    if absent:
        lines.append(f"total (not run): {sum(r['trials'] for r in absent):.0f} trials, train "
                     f"{duration(sum(r['train_s'] for r in absent))} summed, "
                     f"{sum(r['wall_s'] for r in absent) / 3600:.3g} trial-hours of wall time, forecast only")
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def duration(seconds: float) -> str:
    """"4.2 s", "13 min", "5.2 h", "31 d"."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.0f} d"


def draw_configurations(space, count: int = SAMPLES, seed: int = 0) -> list:
    """`count` configurations drawn from the space's distributions (the framework among them), as dicts of
    TrialSpec fields with the space's fixed values."""
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(count):
        params = {"framework": space.frameworks[rng.integers(len(space.frameworks))]}
        for name, p in space.parameters.items():
            params[name] = _draw(p, rng)
        draws.append({**space.fixed, **params})
    return draws


def _draw(p, rng):
    if p.type == "categorical":
        return p.choices[rng.integers(len(p.choices))]
    low, high = p.low, p.high
    value = math.exp(rng.uniform(math.log(low), math.log(high))) if p.log else rng.uniform(low, high)
    if p.type == "int":
        step = p.step
        return int(min(high, low + round((value - low) / step) * step))
    if p.step is not None:
        return float(min(high, low + round((value - low) / p.step) * p.step))
    return float(value)

