"""`sensitivity sweep`: validate, open the study, recover what a killed driver left, run to N trials.

Order matters: everything that can be wrong with the input (space, options, cluster address, storage,
environments, resources per trial against the cluster's) is reported before any trial starts or any study
is created; then the study is opened, orphans of a killed
driver are failed and re-queued, and Ray Tune runs exactly the trials still missing.
"""
from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Optional

from sensitivity.spaces import Space, load_space
from sensitivity.sweep import ray_processes
from sensitivity.sweep.plans import default_plan, enqueue_plan
from sensitivity.sweep.records import SPACE_HASH, beat, count_final
from sensitivity.sweep.recovery import recover
from sensitivity.sweep.storage import default_url, describe, open_storage

SAMPLERS = ("tpe", "random", "grid", "qmc", "nsga2")
PRUNERS = ("none", "asha", "hyperband")
HEARTBEAT_S = 5.0


class SweepError(Exception):
    """Bad input found before anything ran: one line, exit 2."""


@dataclass
class SweepOptions:
    trials: int
    parallel: int = 1
    sampler: str = "tpe"
    pruner: str = "none"
    storage: Optional[str] = None
    study: Optional[str] = None
    address: Optional[str] = None
    cpus_per_trial: float = 1
    gpus_per_trial: float = 0
    timeout_per_trial: Optional[float] = None
    time_budget: Optional[float] = None
    seed: Optional[int] = None
    allow_space_change: bool = False
    progress: bool = True
    keep_weights: bool = False  # each trial saves its trained weights (for sensitivity robustness)


def run_sweep(space_path, options: SweepOptions, with_defaults: bool = False, **overrides) -> dict:
    """Sweep a space file; `overrides` (frameworks, seeds, semantics) replace the file's values."""
    space = load_space(space_path, **overrides)
    plan = default_plan(space, space.frameworks, [space.dataset], seeds=space.seeds,
                        budget_epochs=space.fixed.get("epochs")) if with_defaults else []
    return run_space(space, options, plan)


def run_space(space: Space, options: SweepOptions, plan: list = (), keep_ray: bool = False) -> dict:
    """Run a validated space to N final trials; `plan`'s trials (PlannedTrial) are queued first, once.
    With `keep_ray`, a Ray this process started stays up for the next call (stop it with tuning.stop_ray)."""
    _check_options(space, options)
    _check_environments(space)
    from sensitivity.sweep.tuning import ResourceError, run_tune, start_ray, stop_ray

    storage = open_storage(options.storage)
    if not ray_processes.started():
        ray_processes.clean_up_leftovers()  # a killed driver's Ray first, then ours
        try:
            start_ray(options)
        except ResourceError as exc:
            raise SweepError(str(exc)) from None
    try:
        study = _open_study(space, storage, options)
        driver_id = uuid.uuid4().hex[:12]
        stop_beating = _start_heartbeat(study, driver_id)
        try:
            orphans = recover(study, driver_id)
            enqueue_plan(study, plan)
            missing = options.trials - count_final(study)
            summary = {"study": study.study_name, "storage": describe(options.storage or default_url()),
                       "orphans_requeued": orphans}
            if missing > 0:
                run_tune(study, space, options, driver_id, missing)
            summary["final_trials"] = count_final(study)
            return summary
        finally:
            stop_beating()
    finally:
        if not keep_ray:
            stop_ray()


def _check_options(space: Space, options: SweepOptions) -> None:
    from sensitivity.paths import UnsafeName, check_name
    try:
        check_name(options.study or space.study)
    except UnsafeName as exc:
        raise SweepError(f"--study: {exc}") from None
    if options.sampler not in SAMPLERS:
        raise SweepError(f"--sampler {options.sampler!r}: allowed {', '.join(SAMPLERS)}")
    if options.pruner not in PRUNERS:
        raise SweepError(f"--pruner {options.pruner!r}: allowed {', '.join(PRUNERS)}")
    if options.pruner != "none" and len(space.objectives) > 1:
        raise SweepError(f"--pruner {options.pruner}: pruning needs a single objective; this space has "
                         f"{len(space.objectives)} (Optuna records no intermediate values with several)")
    if options.sampler == "grid" and any(getattr(p, "type", "") == "float" and p.step is None
                                         for p in space.parameters.values()):
        raise SweepError("--sampler grid: every float parameter needs a step")
    if options.trials <= 0 or options.parallel <= 0:
        raise SweepError("--trials and --parallel must be positive")
    from sensitivity.sweep.tuning import check_address
    try:
        check_address(options.address)  # before the study: an unreachable cluster would be retried for minutes
    except ValueError as exc:
        raise SweepError(str(exc)) from None


def _check_environments(space: Space) -> None:
    from sensitivity import frameworks
    for name in space.frameworks:
        version, usable, why = frameworks.probe(name)
        if not usable:
            raise SweepError(f"framework {name} cannot run here: {why}")


def _open_study(space: Space, storage, options: SweepOptions):
    import warnings

    import optuna

    name = options.study or space.study
    directions = [o.direction for o in space.objectives]
    sampler = make_sampler(options.sampler, space, options.seed)
    study = optuna.create_study(study_name=name, storage=storage, directions=directions, sampler=sampler,
                                load_if_exists=True)
    if [d.name.lower() for d in study.directions] != directions:
        raise SweepError(f"study {name} exists with other objectives' directions; use --study to name a new one")
    metrics = [o.metric for o in space.objectives]  # optuna-dashboard shows these, not "Objective 0"
    if study.metric_names != metrics:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metrics)
    stored = study.user_attrs.get(SPACE_HASH)
    if stored is None:
        study.set_user_attr(SPACE_HASH, space.fingerprint())
        study.set_user_attr("space", space.model_dump(mode="json"))
    elif stored != space.fingerprint():
        if not options.allow_space_change:
            raise SweepError(f"study {name} was made from another search space (fingerprint {stored}, now "
                             f"{space.fingerprint()}); resume with --allow-space-change, or name a new --study")
        study.set_user_attr(SPACE_HASH, space.fingerprint())
    return study


def make_sampler(name: str, space: Space, seed: Optional[int]):
    import warnings

    import optuna
    import optuna.samplers as s
    # multivariate TPE is marked experimental; it is the better choice for correlated hyper-parameters
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if name == "random":
        return s.RandomSampler(seed=seed)
    if name == "qmc":
        return s.QMCSampler(seed=seed, warn_independent_sampling=False)
    if name == "nsga2":
        return s.NSGAIISampler(seed=seed)
    if name == "grid":
        return s.GridSampler(_grid(space), seed=seed)
    return s.TPESampler(seed=seed, multivariate=True)


def _grid(space: Space) -> dict:
    import numpy as np
    grid = {"framework": list(space.frameworks)}
    for name, p in space.parameters.items():
        if p.type == "categorical":
            grid[name] = list(p.choices)
        elif p.type == "int":
            grid[name] = list(range(p.low, p.high + 1, p.step))
        else:
            grid[name] = [float(v) for v in np.arange(p.low, p.high + p.step / 2, p.step)]
    return grid


def _start_heartbeat(study, driver_id: str):
    stop = threading.Event()
    beat(study, driver_id)

    def loop() -> None:
        while not stop.wait(HEARTBEAT_S):
            try:
                beat(study, driver_id)
            except Exception:  # a storage hiccup: the next beat retries
                pass

    threading.Thread(target=loop, daemon=True, name="heartbeat").start()
    return stop.set

