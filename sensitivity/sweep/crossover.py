"""The plan of a dataset crossover (`sensitivity crossover`): on one framework, the configuration tuned for
dataset A and the one tuned for dataset B, each run on both datasets at its own budget (the analysis is
`analysis.crossover`).

A side's tuned configuration is, in this order: `--tuned DATASET=STUDY`, the best configuration of a sweep on
that dataset (mean validation accuracy over its seeds, on the framework and regime), frozen now, before the
crossover runs, and run at the sweep's own epochs; `--default DATASET=NAME`, a published default tuned for the
dataset's family; else the framework's own published default for it. A side with none is refused before
anything runs, and so are two datasets of one family that are not its two disjoint halves (they overlap). The
crossover's runs use seeds from FIRST_SEED on, never a sweep's own (seed 0 upwards): the
configuration chosen as the best of a sweep is then judged on runs that did not choose it. The two halves of one
dataset (digits-a and digits-b, mnist5k-a and mnist5k-b: `defaults.HALVES`) make a placebo.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from sensitivity import datasets
from sensitivity.config.defaults import HALVES, DefaultEntry, family, load_table, trial_fields
from sensitivity.studies.catalog import load
from sensitivity.studies.storage import StorageError
from sensitivity.studies.trial_rows import trial_records
from sensitivity.sweep.plans import PlannedTrial, check_planned, steps_per_epoch

FIRST_SEED = 100
CONFIG_FIELDS = ("batch_size", "lr", "epochs", "iterations", "optimizer", "momentum", "weight_decay", "lr_policy",
                 "gamma", "power", "stepsize", "stepvalues")


class CrossoverError(ValueError):
    """A crossover that cannot be planned; one line naming the option and what would do."""


@dataclass(frozen=True)
class Tuned:
    """A side's tuned configuration: the entry that runs it (a published default, or a sweep's best as an
    entry of its own budget) and how the report names it."""
    dataset: str
    entry: DefaultEntry
    label: str


def resolve(framework: str, dataset: str, regime: str, tuned_study=None, default=None, storage=None) -> Tuned:
    """The configuration tuned for `dataset` on `framework` (see the module)."""
    if tuned_study is not None:
        return _from_sweep(framework, dataset, regime, tuned_study, storage)
    entries = load_table()
    if default is not None:
        entry = next((e for e in entries if e.name == default), None)
        if entry is None:
            raise CrossoverError(f"--default {dataset}={default}: no such entry in search_spaces/defaults.yaml; "
                                 f"allowed: {', '.join(e.name for e in entries)}")
        if entry.kind != "default" or entry.dataset != family(dataset):
            what = "a shared setting" if entry.kind == "shared" else f"tuned for {entry.dataset}"
            raise CrossoverError(f"--default {dataset}={default}: {default} was not tuned for {family(dataset)} "
                                 f"(it is {what})")
        return Tuned(dataset, entry, f"default {entry.name}")
    own = [e for e in entries if e.kind == "default" and e.runs_on == framework and e.dataset == family(dataset)]
    if not own:
        raise CrossoverError(f"no configuration tuned for {dataset} on {framework}: no published default of "
                             f"{framework} is tuned for {family(dataset)}; give --tuned {dataset}=SWEEP_STUDY (the "
                             f"best configuration of a sweep on {dataset}) or --default {dataset}=NAME")
    return Tuned(dataset, own[0], f"default {own[0].name}")


def _from_sweep(framework: str, dataset: str, regime: str, name: str, storage) -> Tuned:
    """The best sampled configuration of sweep `name` for the framework and regime, on mean validation
    accuracy over its seeds."""

    try:
        study = load(name, storage)
    except StorageError as exc:
        raise CrossoverError(f"--tuned {dataset}={name}: {exc}") from None
    swept = (study.user_attrs.get("space") or {}).get("dataset")
    if swept != dataset:
        raise CrossoverError(f"--tuned {dataset}={name}: that study swept {swept}, not {dataset}")
    scores, specs = {}, {}
    for trial in trial_records(study, ("status", "val_accuracy", "config_id", "spec", "planned")):
        attrs, spec = trial.user_attrs, trial.user_attrs.get("spec") or {}
        if (trial.state != "COMPLETE" or attrs.get("status") != "ok" or attrs.get("planned")
                or attrs.get("val_accuracy") is None or spec.get("framework") != framework
                or spec.get("semantics", "native") != regime):
            continue
        scores.setdefault(attrs.get("config_id"), []).append(attrs["val_accuracy"])
        specs.setdefault(attrs.get("config_id"), spec)
    if not scores:
        raise CrossoverError(f"--tuned {dataset}={name}: no sampled trial of {framework} ({regime}) finished "
                             "with status ok there")
    best = max(scores, key=lambda c: (sum(scores[c]) / len(scores[c]), len(scores[c])))
    spec = specs[best]
    config = {k: spec[k] for k in CONFIG_FIELDS if spec.get(k) not in (None, [], ())}
    policy = config.get("lr_policy", "fixed")
    unused = {"fixed": ("gamma", "power", "stepsize", "stepvalues"), "step": ("power", "stepvalues"),
              "multistep": ("power", "stepsize"), "inv": ("stepsize", "stepvalues"),
              "exp": ("power", "stepsize", "stepvalues"), "cosine": ("gamma", "power", "stepsize", "stepvalues")}
    without_momentum = () if config.get("optimizer") in ("momentum", "nesterov") else ("momentum",)
    for field in unused.get(policy, ()) + without_momentum:
        config.pop(field, None)  # what the configuration does not use: it would only differ by accident
    if config.get("iterations"):
        config.pop("epochs", None)
    else:
        config.pop("iterations", None)
    train = steps_per_epoch(dataset, 1, spec.get("val_fraction", 0.0))  # its training samples an epoch
    entry = DefaultEntry(name=f"{name}:{best}", framework=framework, runs_on=framework, dataset=dataset,
                         source={"project": "sweep", "example": name, "file": f"study {name}"}, config=config,
                         train_size=train, original_model=spec.get("model") or "")
    shown = ", ".join(f"{k}={config[k]:g}" if isinstance(config[k], float) else f"{k}={config[k]}"
                      for k in sorted(config))
    seeds = len(scores[best])
    return Tuned(dataset, entry, f"best of {name} ({shown}; mean val accuracy {sum(scores[best]) / seeds:.3f}, "
                                 f"{seeds} seed{'s' if seeds != 1 else ''})")


def crossover_plan(space, framework: str, sides: list, seeds: int, cut=None, model=None, budgets=("epochs",)) -> list:
    """Each side's tuned configuration on both datasets, in each regime of the space and each definition of its
    budget in `budgets` (`core.budgets.BUDGETS`), `seeds` seeds from FIRST_SEED, as planned trials (each records its
    per-sample correctness); every run trains `model`, by default each dataset's own."""
    (a, b) = (side.dataset for side in sides)
    placebo = {a, b} in HALVES
    plan = []
    for regime in space.regimes():
        name = f"{framework}/{regime}: {a} x {b}" + (f" ({model})" if model else "")
        for side in sides:
            key = json.dumps(side.entry.config, sort_keys=True)
            for dataset, budget in ((d, kind) for kind in budgets for d in (a, b)):
                fields, scale = trial_fields(side.entry, dataset, steps_per_epoch(
                    dataset, side.entry.config.get("batch_size", 64), space.val_fraction), cut, budget)
                planned = {**fields, "semantics": regime, "framework": framework, "dataset": dataset,
                           "model": model or datasets.REGISTRY[dataset].default_model, "record_correct": True}
                check_planned(planned, f"tuned for {side.dataset} ({side.label}) on {dataset}")
                attrs = {"crossover": name, "placebo": placebo, "tuned_for": side.dataset, "tuned_config": side.label,
                         "tuned_key": key, **scale.attrs(),
                         "config_id": f"crossover:{name}:tuned for {side.dataset}:on {dataset}"
                                      + ("" if budget == "epochs" else f":{budget}")}
                plan += [PlannedTrial({"framework": framework, **({"semantics": regime} if "semantics" in
                                                                 space.parameters else {})},
                                      planned, {**attrs, "seed": seed})
                         for seed in range(FIRST_SEED, FIRST_SEED + seeds)]
    return plan
