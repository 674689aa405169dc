"""`sensitivity ablate`: walk from one training set-up to another one knob at a time.

DeepCAVE's ablation path, applied to framework configuration. A set-up is a framework and a regime
(`torch:native`, `tensorflow:native`, `torch:canonical`). Between two set-ups differ some of the semantics
knobs (init, update, weight_decay, eps_rho, schedule; `sensitivity.core.semantics`) and, across frameworks, the
framework itself (its kernels, with its own scheduler when both ends step their framework's). From the
first set-up, each round runs every knob still to change, flipped alone, with n seeds, and keeps the one
that moves validation accuracy most; the walk ends at the second set-up. Knobs that cannot change what this
configuration computes (weight decay at 0, Adam's epsilon for momentum SGD) are listed, not walked: they keep
the first set-up's value until the last step reaches the second set-up.

Every point is a planned trial of one Optuna study (resumable: a rerun reuses the points already run), and
the path is stored in the study's user attribute `ablation`. Points other than the two ends run the
hand-written update (`optim.rule_update`) under the composed Rule; a native end runs the stock classes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from sensitivity.config.spaces import Space
from sensitivity.core import semantics
from sensitivity.core.spec import TrialSpec
from sensitivity.studies import catalog
from sensitivity.sweep.driver import run_space
from sensitivity.sweep.plans import PlannedTrial
from sensitivity.sweep.tuning import stop_ray

FRAMEWORK = "framework"  # the pseudo-knob of the engine: which framework runs the trial
ATTR = "ablation"
OBJECTIVE = "val_accuracy"


class AblationError(ValueError):
    """Bad set-ups or configuration: one line, exit 2."""


@dataclass(frozen=True)
class Setup:
    framework: str
    regime: str

    @classmethod
    def parse(cls, text: str, option: str) -> "Setup":
        framework, _, regime = text.partition(":")
        regime = regime or "native"
        if framework not in semantics.NATIVE or framework == "caffe":
            allowed = ", ".join(f for f in semantics.NATIVE if f != "caffe")
            raise AblationError(f"{option} {text}: unknown framework {framework!r}; allowed: {allowed}")
        if regime not in ("native", "canonical"):
            raise AblationError(f"{option} {text}: regime {regime!r}; allowed: native, canonical (as FRAMEWORK:REGIME)")
        return cls(framework, regime)

    def knobs(self) -> dict:
        source = self.framework if self.regime == "native" else semantics.CANONICAL
        return {knob: source for knob in semantics.KNOBS}

    def __str__(self) -> str:
        return f"{self.framework} {self.regime}"


@dataclass(frozen=True)
class Point:
    """A position on the path: the engine and each knob's source."""

    framework: str
    knobs: tuple  # ((knob, source), ...) in semantics.KNOBS order

    @classmethod
    def of(cls, framework: str, knobs: dict) -> "Point":
        return cls(framework, tuple((k, knobs[k]) for k in semantics.KNOBS))

    def flipped(self, knob: str, target: "Point") -> "Point":
        knobs = dict(self.knobs)
        if knob == FRAMEWORK:  # a framework's scheduler moves with it
            if knobs["schedule"] == self.framework and dict(target.knobs)["schedule"] == target.framework:
                knobs["schedule"] = target.framework
            return Point.of(target.framework, knobs)
        knobs[knob] = dict(target.knobs)[knob]
        return Point.of(self.framework, knobs)

    def spec(self, base: TrialSpec) -> TrialSpec:
        """The trial of this point (raises semantics.SemanticsError where it cannot run)."""
        knobs = dict(self.knobs)
        regime = "native" if all(v == self.framework for v in knobs.values()) else "canonical"
        fields = {**base.model_dump(exclude={"knobs", "init", "semantics", "framework", "backend"}),
                  "framework": self.framework, "semantics": regime, "knobs": knobs}
        return TrialSpec(**fields)

    def label(self) -> str:
        return f"{self.framework} " + ", ".join(f"{k}={v}" for k, v in self.knobs)


def knobs_to_walk(base: TrialSpec, start: Point, end: Point) -> tuple:
    """(knobs whose change can change the result, knobs that cannot for this configuration)."""
    walk, inert = [], []
    differing = [k for k in semantics.KNOBS if dict(start.knobs)[k] != dict(end.knobs)[k]]
    if start.framework != end.framework:
        differing.append(FRAMEWORK)
        if dict(start.knobs)["schedule"] == start.framework and dict(end.knobs)["schedule"] == end.framework:
            differing.remove("schedule")  # each end steps its own framework's scheduler: part of the framework
    for knob in differing:
        (walk if _matters(base, start, start.flipped(knob, end)) else inert).append(knob)
    return walk, inert


def _matters(base: TrialSpec, a: Point, b: Point) -> bool:
    if a.framework != b.framework:
        return True
    ka, kb = dict(a.knobs), dict(b.knobs)
    if ka["init"] != kb["init"]:
        return True
    if ka["schedule"] != kb["schedule"] and base.lr_policy != "fixed":
        return True
    fields = semantics.relevant_fields(base)
    ra, rb = semantics.compose(ka), semantics.compose(kb)
    return any(getattr(ra, f) != getattr(rb, f) for f in fields)


@dataclass
class Step:
    knob: str  # "" for the start
    point: Point
    numbers: list  # the trial numbers of its seeds


def walk(base: TrialSpec, start_setup: Setup, end_setup: Setup, seeds: int,
         run_points: Callable[[list], dict], score: Callable[[list], float]) -> tuple:
    """The greedy path. `run_points([(point, spec), ...])` runs each point's seeds and returns
    {point: [trial numbers]}; `score(numbers)` is a point's mean objective. Returns (steps, inert knobs)."""
    start, end = Point.of(start_setup.framework, start_setup.knobs()), Point.of(end_setup.framework,
                                                                                 end_setup.knobs())
    remaining, inert = knobs_to_walk(base, start, end)
    current = start  # inert knobs keep the start's value until the last step, which reaches `end` exactly
    steps = [Step("", current, run_points([(current, current.spec(base))])[current])]
    while remaining:
        candidates = {}
        for knob in remaining:
            point = end if len(remaining) == 1 else current.flipped(knob, end)
            try:
                candidates[knob] = (point, point.spec(base))
            except ValueError:  # not expressible yet (a framework's scheduler on another framework)
                continue
        if not candidates:
            raise AblationError(f"no knob of {', '.join(remaining)} can change next from {current.label()}")
        numbers = run_points(list(candidates.values()))
        here = score(steps[-1].numbers)
        knob = max(candidates, key=lambda k: (abs(score(numbers[candidates[k][0]]) - here), -remaining.index(k)))
        current = candidates[knob][0]
        steps.append(Step(knob, current, numbers[current]))
        remaining.remove(knob)
    return steps, inert


def run_ablation(base: TrialSpec, start: Setup, end: Setup, seeds: int, options, log=print) -> dict:
    """Walk the path on Ray into one study (options: sweep.driver.SweepOptions, its `study` named); returns
    the record stored in the study's user attribute `ablation`."""

    space = ablation_space(options.study, base, start, end, seeds)
    plan: list = []
    trials: dict = {}

    def run_points(points: list) -> dict:
        for point, spec in points:
            planned = spec.model_dump(mode="json", exclude={"seed"})
            plan.extend(PlannedTrial({"framework": point.framework}, planned,
                                     {"seed": seed, "config_id": f"ablation:{point.label()}"})
                        for seed in range(seeds))
        options.trials = len(plan)
        log(f"ablate: running {len(points)} point(s) x {seeds} seeds")
        run_space(space, options, plan, keep_ray=True)
        study = catalog.load(space.study, options.storage)
        by_config: dict = {}
        for trial in study.get_trials(deepcopy=False):
            by_config.setdefault(trial.user_attrs.get("config_id"), []).append(trial)
        for point, _ in points:
            trials[point] = [t for t in by_config.get(f"ablation:{point.label()}", [])]
        return {point: [t.number for t in trials[point]] for point, _ in points}

    def score(numbers: list) -> float:
        values = [t.user_attrs.get(OBJECTIVE) for ts in trials.values() for t in ts if t.number in numbers]
        values = [v for v in values if v is not None]
        return sum(values) / len(values) if values else -math.inf

    try:
        steps, inert = walk(base, start, end, seeds, run_points, score)
    finally:
        stop_ray()
    record = {"from": str(start), "to": str(end), "seeds": seeds, "objective": OBJECTIVE,
              "config": base.model_dump(mode="json", exclude={"seed", "knobs", "init", "semantics", "framework",
                                                              "backend", "keep_weights", "keep_checkpoints",
                                                              "data_dir"}),
              "inert": inert, "steps": [{"knob": s.knob, "framework": s.point.framework, "knobs": dict(s.point.knobs),
                                         "trials": s.numbers} for s in steps]}
    catalog.load(space.study, options.storage).set_user_attr(ATTR, record)
    return record


def ablation_space(study: str, base: TrialSpec, start: Setup, end: Setup, seeds: int):
    """The study's space: nothing sampled, every point planned, chosen on validation accuracy."""

    frameworks = tuple(dict.fromkeys((start.framework, end.framework)))
    return Space(study=study, dataset=base.dataset, model=base.model, frameworks=frameworks,
                 objectives=({"metric": OBJECTIVE, "direction": "maximize"},), val_fraction=base.val_fraction,
                 seeds=seeds)
