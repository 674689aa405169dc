"""Planned trials: fixed configurations queued in a study before any sampled one, run by the same driver.

A planned trial carries its whole configuration in the user attribute `planned` (TrialSpec fields that
override what the space would give), and `plan_key` so that queueing the plan again (a resumed run) adds
nothing. Framework defaults are planned trials: `sweep --with-defaults` puts each framework's own default
first, `sensitivity defaults` runs only them, each marked `is_default` with the default's name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sensitivity import datasets
from sensitivity.config.defaults import DefaultsError, family, load_table, trial_fields
from sensitivity.config.spaces import Space
from sensitivity.core.spec import TrialSpec
from sensitivity.forecast.runs import rough_seconds, run_of


@dataclass(frozen=True)
class PlannedTrial:
    params: dict  # the study's parameters for this trial (the framework at least)
    planned: dict  # TrialSpec fields of the configuration
    attrs: dict = field(default_factory=dict)  # more user attributes (is_default, default, seed, ...)

    @property
    def key(self) -> str:
        budget = self.attrs.get("budget", "epochs")  # a run at the published steps is its own, even where the two agree
        return ("|".join(f"{k}={self.planned[k]}" for k in sorted(self.planned)) + f"|seed={self.attrs.get('seed', 0)}"
                + ("" if budget == "epochs" else f"|budget={budget}"))


def steps_per_epoch(dataset: str, batch_size: int, val_fraction: float) -> int:
    """Optimizer steps in one epoch of the dataset's training split (after the validation hold-out); of a
    file set whose files are absent, of its official size (a forecast's plan: such a plan cannot run)."""
    n = datasets.sizes(dataset)[0]
    return max(1, int(n * (1 - val_fraction)) // batch_size)


def own_default(entries: list, framework: str, dataset: str):
    """The default a framework calls its own on a dataset: its own example's (the one tuned for that
    dataset's family if it has several), else the first of Caffe's engine-less defaults. A shared setting
    (DLBench's) is nobody's own default."""
    specific = [e for e in entries if e.kind == "default" and e.runs_on == framework]
    shared = [e for e in entries if e.kind == "default" and e.runs_on == "all"]
    for group in (specific, shared):
        if group:
            return next((e for e in group if e.dataset == family(dataset)), group[0])
    return None


def default_plan(space, frameworks: list, dataset_names: list, seeds: int, cut=None, transfer: bool = False,
                 names=None, record_correct: bool = False, budgets=("epochs",), canonical_seeds=None) -> list:
    """Every framework's own defaults on every dataset (with `transfer`, every default on every framework
    and dataset), `seeds` seeds each (`canonical_seeds` in the canonical regime, where given), in each regime the
    space runs (`Space.regimes`), as planned trials.
    Each runs its published budget under each definition of `budgets` (`core.budgets.BUDGETS`: the source's
    epochs, its steps), or `cut`'s share of it (a `defaults.Cut`), recorded as its `Scale`; `names` limits
    the entries; `record_correct` has each trial record its per-sample correctness (a transfer study's). A
    shared setting without a budget for a dataset is not planned there. DefaultsError for a budget below
    one step or a configuration beyond TrialSpec's bounds (docs/bounds.md), before anything runs."""
    plan = []
    entries = load_table()
    for entry in entries:
        if names is not None and entry.name not in names:
            continue
        for framework in (frameworks if transfer else entry.own_frameworks(frameworks)):
            for dataset, regime in ((d, r) for r in space.regimes() for d in dataset_names):
                if entry.published_epochs(dataset) is None:
                    continue
                batch = entry.config.get("batch_size", 64)
                for budget in budgets:
                    fields, scale = trial_fields(entry, dataset, steps_per_epoch(dataset, batch, space.val_fraction),
                                                 cut, budget)
                    if record_correct:
                        fields["record_correct"] = True
                    runs = canonical_seeds if regime == "canonical" and canonical_seeds is not None else seeds
                    plan += planned_seeds(space, entry, entries, framework, dataset, regime, fields, scale, runs)
    return plan


def check_planned(planned: dict, what: str) -> None:
    """A planned configuration must be a valid trial: DefaultsError naming `what` otherwise (a budget beyond the
    bounds of docs/bounds.md), before anything runs."""
    try:
        TrialSpec(**planned)
    except ValueError as exc:  # pydantic's ValidationError
        raise DefaultsError(f"{what}: {' '.join(str(exc).splitlines()[1:3])}") from None


def planned_seeds(space, entry, entries: list, framework: str, dataset: str, regime: str, fields: dict, scale,
                  seeds: int) -> list:
    """The planned trials of one default on one framework, dataset and regime, one per seed."""
    fields = {**fields, "semantics": regime}
    for name in space.parameters:  # what the default does not set is TrialSpec's default
        fields.setdefault(name, TrialSpec.model_fields[name].default)
    planned = {**fields, "framework": framework, "dataset": dataset, "model": datasets.REGISTRY[dataset].default_model}
    check_planned(planned, f"{entry.name} on {dataset}")
    params = {"framework": framework}
    params.update({name: fields[name] for name in space.parameters if name in fields
                   and _representable(space.parameters[name], fields[name])})
    mine = own_default(entries, framework, dataset)
    attrs = {"is_default": framework in entry.own_frameworks([framework]), "default": entry.name,
             "default_kind": entry.kind, "default_source": entry.framework, "source_dataset": entry.dataset,
             "own_default": mine is not None and mine.name == entry.name, **scale.attrs(),
             "config_id": f"default:{entry.name}:{framework}:{dataset}:{regime}"
                          + ("" if scale.budget == "epochs" else f":{scale.budget}")}
    return [PlannedTrial(params, planned, {**attrs, "seed": seed}) for seed in range(seeds)]


def defaults_space(study: str, frameworks: list, dataset_names: list, seeds: int, regimes=("native",)):
    """The space of a defaults study: nothing sampled, every trial planned; tuned on validation accuracy.
    One regime is fixed; several are a categorical parameter (each planned trial names its own)."""
    regimes = tuple(regimes)
    parameters = {"semantics": {"type": "categorical", "choices": regimes}} if len(regimes) > 1 else {}
    fixed = {"semantics": regimes[0]} if len(regimes) == 1 else {}
    return Space(study=study, dataset=dataset_names[0], frameworks=tuple(frameworks), parameters=parameters,
                 fixed=fixed, objectives=({"metric": "val_accuracy", "direction": "maximize"},), val_fraction=0.2,
                 seeds=seeds)


def _representable(param, value) -> bool:
    """Whether a value can be a trial's parameter under the space's distribution of it."""
    if param.type == "categorical":
        return value in param.choices
    return param.low <= value <= param.high


def longest_first(plan: list, space: Space) -> list:
    """The plan ordered by each trial's length (`forecast.runs.rough_seconds` of its configuration: its `planned`
    fields over the space's, or a design point's parameters), the longest first: the slots then finish together
    rather than waiting on a long trial started last (Graham's longest-first order, which the forecast's wall time
    assumes). Trials of equal length keep the plan's order (a default's seeds stay in order)."""
    def length(trial) -> float:
        fields = {**space.fixed, **trial.params, "dataset": space.dataset, "model": space.model,
                  **(trial.planned or {})}
        return rough_seconds(run_of(fields, space.val_fraction, "cpu", 1))
    return sorted(plan, key=length, reverse=True)  # reverse keeps equal trials in their order


def enqueue_plan(study, plan: list) -> int:
    """Queue the planned trials the study does not hold yet; returns how many were queued."""
    present = {t.user_attrs.get("plan_key") for t in study.get_trials(deepcopy=False)}
    queued = 0
    for trial in plan:
        if trial.key in present:
            continue
        study.enqueue_trial(trial.params, user_attrs={**trial.attrs, "planned": trial.planned, "plan_key": trial.key})
        queued += 1
    return queued
