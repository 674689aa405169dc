"""The plan of a tunability study (`sensitivity tunability`): how much a framework's own default leaves on the
table against the same framework tuned on the same data, and which knob recovers it (Probst, Boulesteix and
Bischl, JMLR 2019; the tuning risk of Weerts et al. 2020). The analysis is `analysis.tables.tunability`.

A default's grid varies its `knobs` around it, every other field at the default's value: lr over LR_DECADES
decades of the default's own lr (its own value among them), optimizer over OPTIMIZERS (at the default's absolute
lr, as Probst does), batch size over BATCH_FACTORS of the default's (the same epochs: the run's steps scale with
it). Every grid point trains at the default's published budget.

Two phases, each a plan of planned trials into one study. Selection: every grid point on `selection_seeds` seeds
from SELECTION_SEED on, judged on validation accuracy. Fresh: each configuration the selection chose (the best of
the whole grid; of each knob alone, the others at the default; of all knobs but one, that one at the default) and
the default itself, on seeds 0..k-1, disjoint from the selection's, where their test accuracy is compared paired
by seed: the winner's curse of the selection does not enter the estimate.
"""
from __future__ import annotations

import itertools
import json

from sensitivity import datasets
from sensitivity.config.defaults import trial_fields
from sensitivity.core.spec import TrialSpec
from sensitivity.sweep.plans import PlannedTrial, check_planned, steps_per_epoch

KNOBS = ("lr", "optimizer", "batch_size")
LR_DECADES = (-2, -1, 0, 1, 2)  # 5 values a decade apart, the default's own in the middle
OPTIMIZERS = ("sgd", "momentum", "adam")
BATCH_FACTORS = (0.25, 0.5, 1, 2, 4)
SELECTION_SEED = 1000  # the selection's seeds start here: never a fresh seed, nor a transfer study's (0 upwards)
ATTR = "tunability"  # the user attribute naming the default a trial tunes; `phase` says which phase it is of


class TunabilityError(ValueError):
    """A tunability study that cannot be planned; one line naming the option and what would do."""


def check_knobs(knobs: list) -> None:
    for knob in knobs:
        if knob not in KNOBS:
            raise TunabilityError(f"--knobs: {knob!r} is not a knob of the grid; allowed: {', '.join(KNOBS)}")
    if len(set(knobs)) != len(knobs) or not knobs:
        raise TunabilityError(f"--knobs {','.join(knobs)}: give each knob once, at least one")


def point_key(point: dict) -> str:
    """A grid point as text: its knobs' values, sorted by knob ("lr=0.001,optimizer=adam")."""
    return ",".join(f"{k}={point[k]:g}" if isinstance(point[k], float) else f"{k}={point[k]}" for k in sorted(point))


def home_point(fields: dict, knobs: list) -> dict:
    """The default's own values of `knobs` (TrialSpec's default where the default sets none)."""
    return {k: fields.get(k, TrialSpec.model_fields[k].default) for k in knobs}


def grid(fields: dict, knobs: list) -> list:
    """Every grid point around the default's `fields` (see the module), the default's own first."""
    home = home_point(fields, knobs)
    values = {"lr": [float(f"{home['lr'] * 10.0 ** d:.6g}") for d in LR_DECADES] if "lr" in knobs else None,
              "optimizer": list(OPTIMIZERS) if "optimizer" in knobs else None,
              "batch_size": sorted({max(1, round(home["batch_size"] * f)) for f in BATCH_FACTORS})
              if "batch_size" in knobs else None}
    points = [dict(zip(knobs, combo)) for combo in itertools.product(*(values[k] for k in knobs))]
    return [home] + [p for p in points if p != home]


def _run_fields(fields: dict, home: dict, point: dict) -> dict:
    """The default's fields with a grid point's values; a batch size other than the default's keeps its epochs."""
    out = {**fields, **point}
    if point.get("batch_size", home.get("batch_size")) != home.get("batch_size") and "iterations" in fields:
        out["iterations"] = max(1, round(fields["iterations"] * home["batch_size"] / point["batch_size"]))
    if out.get("optimizer") in ("momentum", "nesterov"):
        out.setdefault("momentum", TrialSpec.model_fields["momentum"].default)
    return out


def default_fields(space, entry, dataset: str, cut=None, budget: str = "epochs") -> tuple:
    """(the default's TrialSpec fields on `dataset` at its published budget, its Scale)."""
    return trial_fields(entry, dataset, steps_per_epoch(dataset, entry.config.get("batch_size", 64),
                                                        space.val_fraction), cut, budget)


def _trials(space, entry, dataset: str, knobs: list, points: list, seeds, phase: str, defaults: tuple) -> list:
    """The planned trials of `points` around `entry` on its own framework; `defaults`: its (fields, Scale)."""
    fields, scale = defaults
    framework = entry.runs_on
    home = home_point(fields, knobs)
    plan = []
    for regime in space.regimes():
        for point in points:
            planned = {**_run_fields(fields, home, point), "semantics": regime, "framework": framework,
                       "dataset": dataset, "model": datasets.REGISTRY[dataset].default_model}
            check_planned(planned, f"{entry.name} at {point_key(point)} on {dataset}")
            attrs = {ATTR: entry.name, "phase": phase, "knobs": ",".join(knobs),
                     "grid_point": json.dumps(point, sort_keys=True), "grid_home": json.dumps(home, sort_keys=True),
                     "default_source": entry.framework,
                     **scale.attrs(),
                     "config_id": f"tunability:{entry.name}:{framework}:{dataset}:{regime}:{point_key(point)}"}
            params = {"framework": framework, **({"semantics": regime} if "semantics" in space.parameters else {})}
            plan += [PlannedTrial(params, planned, {**attrs, "seed": seed}) for seed in seeds]
    return plan


def selection_plan(space, entries: list, dataset: str, knobs: list, selection_seeds: int, cut=None,
                   budget: str = "epochs") -> list:
    """Every grid point of each default in `entries` (each on its own framework), on `selection_seeds` seeds from
    SELECTION_SEED. DefaultsError for a default without a budget on `dataset` or a point beyond the bounds."""
    check_knobs(knobs)
    plan = []
    for entry in entries:
        defaults = default_fields(space, entry, dataset, cut, budget)
        seeds = range(SELECTION_SEED, SELECTION_SEED + selection_seeds)
        plan += _trials(space, entry, dataset, knobs, grid(defaults[0], knobs), seeds, "selection", defaults)
    return plan


def fresh_plan(space, entry, dataset: str, knobs: list, points: list, seeds: int, cut=None,
               budget: str = "epochs") -> list:
    """The default and the chosen grid `points` on fresh seeds 0..seeds-1 (the default's own first)."""
    defaults = default_fields(space, entry, dataset, cut, budget)
    home = home_point(defaults[0], knobs)
    chosen = [json.loads(k) for k in dict.fromkeys(json.dumps(p, sort_keys=True) for p in [home, *points])]
    return _trials(space, entry, dataset, knobs, chosen, range(seeds), "fresh", defaults)

