"""Importance on a study without a design (any Optuna study, one another program wrote included), the estimator
chosen by how the trials were drawn (`sampling`), per framework where the trials have a `framework` parameter, else
over all trials as one group with the study's own parameters, the objective read from the trials' values (issues 30,
43).

Which estimator fits which sampling (the record's `fits`, whose ranking decides "settled"):
- independent draws from the prior (random, QMC, grid): S1 from given data by RBD-FAST with SALib's 95% interval
  (`given.RbdFastEvaluator`); SALib delta's binned S1 beside it answers the same question, and the record says
  whether their intervals agree (`given.agreement`);
- a model-based sampler (TPE, GP, CMA-ES; traced or inferred): S1 of an ExtraTrees surrogate analysed on a design
  drawn from the prior, with refits on bootstrap resamples (`surrogate.SurrogateEvaluator`), saying how many trials
  it rests on and how much of the space they visit; its ranking is never "settled" (SURROGATE_UNSETTLED: its
  intervals were not shown to cover, and it says what would settle the ranking);
- on every study, fANOVA and PED-ANOVA with bootstrap intervals, each labelled with what it measures
  (`importance.FanovaEvaluator`, `importance.PedAnovaEvaluator`; fANOVA's importances are shares of the main
  effects, normalised to sum to 1, not indices).
Total indices: `given.TOTAL_NEEDS_DESIGN`. Where seeds repeat, a configuration's trials are averaged and every
interval resamples configurations. Bad input is a ValueError of one sentence: too few trials for the estimator
(saying how many it needs), a parameter not in the study, trials without a parameter in common, several
objectives without a target.
"""
from __future__ import annotations

import datetime
import math
from typing import NamedTuple, Optional

import numpy as np

from sensitivity.analysis.rankings.designed import objective_index
from sensitivity.analysis.rankings.given import (MIN_GIVEN, TOTAL_NEEDS_DESIGN, DeltaEvaluator,
                                                 RbdFastEvaluator, agreement, given_data)
from sensitivity.analysis.rankings.importance import (FANOVA_DEPTH, FANOVA_TREES, SUBSAMPLE_MAX, TRIALS_PER_PARAMETER,
                                                      FanovaEvaluator, PedAnovaEvaluator, _quiet_optuna,
                                                      verdict_record)
from sensitivity.analysis.rankings.sampling import DESIGN, MODEL_BASED, UNKNOWN, Sampling, sampling_of
from sensitivity.analysis.rankings.surrogate import (DESIGN_POINTS, MIN_SURROGATE, REFITS, SURROGATE_MAX,
                                                     SurrogateEvaluator)
from sensitivity.studies.trial_rows import trial_records

ALL_TRIALS = "all trials"
MIN_TRIALS = 2
LABELS = {"rbd_fast": RbdFastEvaluator.label, "delta_s1": DeltaEvaluator.label, "surrogate": SurrogateEvaluator.label,
          "fanova": "fANOVA (share of main effects)", "ped_anova": "PED-ANOVA (top 10%)"}
MEASURES = {"rbd_fast": RbdFastEvaluator.measures, "delta_s1": DeltaEvaluator.measures,
            "surrogate": SurrogateEvaluator.measures,
            "fanova": f"Optuna's fANOVA ({FANOVA_TREES} trees of depth {FANOVA_DEPTH}): each parameter's share of the "
                      "main effects' variance in a random forest, normalised to sum to 1 (not an index)",
            "ped_anova": "Optuna's PED-ANOVA: how far a parameter's distribution among the top 10% of trials departs "
                         "from its distribution over all: what puts a trial near the best, not variance"}


def groups_of(trials: list) -> dict:
    """{group: trials}: by the `framework` parameter where every trial has one, else one group."""
    if trials and all("framework" in t.params for t in trials):
        groups: dict = {}
        for t in trials:
            groups.setdefault(str(t.params["framework"]), []).append(t)
        return groups
    return {ALL_TRIALS: trials}


def within_of(text: str) -> tuple:
    """PARAM=VALUE of --within; ValueError (a sentence) otherwise."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise ValueError(f"--within {text!r}: expected PARAM=VALUE (e.g. optimizer=adam)")
    return name, value


def _matches(trial, within) -> bool:
    name, value = within
    return name in trial.params and str(trial.params[name]) == value


SURROGATE_UNSETTLED = ("{top} leads, but not testable here: the surrogate's intervals hold its fit's sampling error, "
                       "not its error where the sampler sent no trial (on Sobol's G-function by TPE they covered x2 "
                       "in 13 of 20 studies, on Ishigami x2 in 3 and x3 in none: docs/experiments.md); trials drawn "
                       "at random or by QMC from the same space would settle it")


def method_of(sampling: Sampling) -> tuple:
    """(the key of the estimator that fits the sampling, the sentence that says what it does)."""
    if sampling.family == MODEL_BASED:
        return "surrogate", (f"S1 of an ExtraTrees surrogate fitted to the trials (at most {SURROGATE_MAX}) and read "
                             f"on {DESIGN_POINTS} points drawn from the prior, its interval from {REFITS} refits on "
                             "bootstrap resamples of the configurations: the trials crowd where the sampler sent them, "
                             "so no estimator that assumes independent draws fits them")
    if sampling.family == DESIGN:
        return "fanova", "a design's points are analysed by its own estimator (Sobol' or Morris); within a level of " \
                         "one of its factors, fANOVA and PED-ANOVA only"
    return "rbd_fast", ("S1 from given data by RBD-FAST with SALib's 95% interval, the estimator for independent draws "
                        "from the prior; SALib delta's binned S1 beside it for agreement")


class Complete(NamedTuple):
    """A complete trial as the estimators read it: the fields of Optuna's FrozenTrial they use, read in bulk
    (`trial_rows.trial_records`: Optuna's ORM took 10.6 s for the 10,000 trials of bench_analysis's study, the
    records 0.3 s). Of the user attributes only `config_id`; of the system attributes only their keys (the
    samplers' traces: `sampling.TRACES`), each valued None."""
    number: int
    params: dict
    distributions: dict  # name -> Optuna's distribution
    values: list
    user_attrs: dict
    system_attrs: dict


def complete_trials(study, index: int) -> list:
    """The COMPLETE trials of `study` (`Complete`, by number) whose objective `index` is finite."""
    # lazy: optuna
    from optuna.distributions import json_to_distribution

    distributions: dict = {}  # each distinct distribution's JSON parsed once
    return [Complete(r.number, r.params, {n: distributions.get(text) or distributions.setdefault(
                         text, json_to_distribution(text)) for n, text in r.distributions.items()},
                     r.values, r.user_attrs, dict.fromkeys(r.system_keys))
            for r in trial_records(study, ("config_id",), system_keys=True)
            if r.state == "COMPLETE" and r.values is not None and len(r.values) > index
            and math.isfinite(r.values[index])]


def _common_parameters(trials: list, leave_out=()) -> list:
    names = sorted({n for t in trials for n in t.params if n not in ("framework", *leave_out)})
    return [n for n in names if all(n in t.params for t in trials)]


def _objective_trials(trials: list, given, values_of) -> list:
    """One COMPLETE frozen trial per configuration of `given`'s source, valued by `values_of` (minimised), each with
    its own id (PED-ANOVA tells trials apart by their ids)."""
    # lazy: optuna
    from optuna.trial import FrozenTrial, TrialState

    now = datetime.datetime.now()
    return [FrozenTrial(number=i, trial_id=i, state=TrialState.COMPLETE, value=values_of(v), datetime_start=now,
                        datetime_complete=now, params=dict(t.params), distributions=dict(t.distributions),
                        user_attrs={}, system_attrs={}, intermediate_values={})
            for i, (t, v) in enumerate(zip(trials, given.Y))]


def _group_importance(trials: list, index: int, direction, sampling: Sampling, params: list, seed: int) -> dict:
    fits, _ = method_of(sampling)
    varied = [n for n in params if len({repr(t.params.get(n)) for t in trials}) > 1]
    record = {"n": len(trials), "fits": fits, "parameters": {}}
    if len(trials) < MIN_TRIALS or not varied:
        record["why"] = (f"{len(trials)} complete trial(s) with {len(varied)} parameter(s) that vary in all of them: "
                         "importance needs at least 2 trials and 1 varied parameter")
        return record
    values = [t.values[index] for t in trials]
    given = given_data(trials, varied, values, seed)
    firsts = list(given.representatives)
    record.update(configurations=given.configurations, rows=len(given.Y))
    if given.repeated:
        record["repeated"] = (f"{given.trials} trials in {given.configurations} configurations: each "
                              "configuration's trials averaged, and every interval resamples configurations")
    if len(given.Y) < given.configurations:
        record["subsample"] = [len(given.Y), given.configurations]
    if len(given.Y) < TRIALS_PER_PARAMETER * len(varied):
        record["warning"] = (f"{len(given.Y)} configurations for {len(varied)} parameters, fewer than "
                             f"{TRIALS_PER_PARAMETER} a parameter: the importances may change with more trials")
    rankings: dict = {}
    sign = 1.0 if direction.name == "MINIMIZE" else -1.0
    if fits == "rbd_fast":
        evaluators = {"rbd_fast": (RbdFastEvaluator(), given), "delta_s1": (DeltaEvaluator(), given)}
    elif fits == "surrogate":
        sub = given if len(given.Y) <= SURROGATE_MAX else given_data(trials, varied, values, seed, SURROGATE_MAX)
        evaluators = {"surrogate": (SurrogateEvaluator(), sub)}
    else:
        evaluators = {}
    for key, (evaluator, sample) in evaluators.items():
        try:
            rankings[key] = evaluator.evaluate(sample, seed=seed)
        except ValueError as exc:
            record.setdefault("errors", {})[key] = str(exc)
    objective = _objective_trials(firsts, given, lambda v: sign * v)
    if len(objective) > SUBSAMPLE_MAX:
        record["fanova_subsample"] = [SUBSAMPLE_MAX, len(objective)]
        chosen = np.random.default_rng(seed).choice(len(objective), SUBSAMPLE_MAX, replace=False)
        objective = [objective[i] for i in sorted(chosen)]
    for key, evaluator in (("fanova", FanovaEvaluator()), ("ped_anova", PedAnovaEvaluator())):
        try:
            with _quiet_optuna():
                rankings[key] = evaluator.evaluate(objective, varied, seed=seed)
        except (ImportError, ValueError, RuntimeError) as exc:  # scikit-learn missing; a degenerate sample
            record.setdefault("errors", {})[key] = str(exc).splitlines()[0]
    for key, ranking in rankings.items():
        for name, estimate in zip(ranking.names, ranking.estimates):
            record["parameters"].setdefault(name, {})[key] = [round(float(v), 6) for v in estimate]
    ranking = rankings.get(fits)
    if ranking is not None:
        verdict = verdict_record(ranking)
        record.update(settled=verdict["settled"], top=verdict["top"], why=verdict["why"], lead=verdict["lead"])
        if fits == "surrogate":  # its intervals are not shown to cover: no ranking is settled on them
            record.update(settled=False, why=SURROGATE_UNSETTLED.format(top=verdict["top"]))
        if "visited" in ranking.others:
            record["visited"] = round(ranking.others["visited"], 3)
        used = evaluators[fits][1] if fits in evaluators else given
        record["rests_on"] = {"trials": used.trials, "configurations": ranking.size}
    elif fits in ("rbd_fast", "surrogate"):
        record.update(settled=False, why=record.get("errors", {}).get(fits, "no estimate"))
    if "rbd_fast" in rankings and "delta_s1" in rankings:
        record["agreement"] = agreement(rankings["rbd_fast"], rankings["delta_s1"])
    return record


def _needs(sampling: Sampling) -> int:
    return MIN_SURROGATE if sampling.family == MODEL_BASED else MIN_GIVEN


def plain_importance(study, objective: Optional[str] = None, seed: int = 0, within: Optional[tuple] = None,
                     params: Optional[list] = None) -> dict:
    """The JSON record: objective, sampling, method, total, evaluators' meaning, per_group {G: {n, fits, parameters
    {NAME: {estimator: [est, low, high]}}, settled, why, agreement, ...}}; `parameters` at the top where there is one
    group. `within` (PARAM, VALUE): only the trials with that value, PARAM left out. `params`: only these."""
    if objective is None and len(study.directions) > 1:
        names = study.metric_names or [f"values[{i}]" for i in range(len(study.directions))]
        raise ValueError(f"study {study.study_name} has {len(study.directions)} objectives ({', '.join(names)}): "
                         "give --target NAME")
    index, metric = objective_index(study, objective)
    trials = complete_trials(study, index)
    names = sorted({n for t in trials for n in t.params})
    if within is not None:
        if within[0] not in names:
            raise ValueError(f"--within {within[0]}={within[1]}: {within[0]!r} is not a parameter of study "
                             f"{study.study_name}; allowed: {', '.join(names)}")
        values = sorted({str(t.params[within[0]]) for t in trials if within[0] in t.params})
        trials = [t for t in trials if _matches(t, within)]
        if not trials:
            raise ValueError(f"--within {within[0]}={within[1]}: no complete trial has that value; allowed: "
                             f"{', '.join(values)}")
    for name in params or ():
        if name not in names:
            raise ValueError(f"--params {name}: not a parameter of study {study.study_name}; allowed: "
                             f"{', '.join(names) or 'none'}")
    leave_out = within[:1] if within else ()
    common = _common_parameters(trials, leave_out)
    if trials and not common:
        raise ValueError(f"study {study.study_name}: its {len(trials)} complete trials have no parameter in common "
                         "(each index needs a parameter every trial sampled)")
    chosen = [n for n in common if params is None or n in params]
    if params and not chosen:
        raise ValueError(f"--params {','.join(params)}: not sampled by every complete trial; common to all: "
                         f"{', '.join(common)}")
    sampling = sampling_of(study, trials, chosen)
    needed = _needs(sampling)
    groups = groups_of(trials)
    if within is None and sampling.family != DESIGN and max((len(g) for g in groups.values()), default=0) < needed:
        fits = method_of(sampling)[0]
        extra = ("; TPE's 10 start-up trials alone never give an interval" if sampling.family in (MODEL_BASED, UNKNOWN)
                 else "")
        apart = (f" ({len(groups)} frameworks: {', '.join(f'{g} {len(ts)}' for g, ts in sorted(groups.items()))})"
                 if len(groups) > 1 else "")
        raise ValueError(f"study {study.study_name} has {len(trials)} complete trials{apart}; {LABELS[fits]} needs at "
                         f"least {needed}{' in one framework' if apart else ''}{extra} (fANOVA and PED-ANOVA with "
                         "intervals on fewer: sensitivity report STUDY, its importance section)")
    direction = study.directions[index]
    per = {g: _group_importance(ts, index, direction, sampling, chosen, seed) for g, ts in groups.items()}
    fits, method = method_of(sampling)
    record = {"objective": metric, "direction": direction.name.lower(), "design": None, "n": len(trials),
              "sampling": sampling._asdict() | {"p_value": None if math.isnan(sampling.p_value)
                                                else round(sampling.p_value, 4)},
              "fits": fits, "method": method, "total": TOTAL_NEEDS_DESIGN, "per_group": per,
              "settled": per[next(iter(per))].get("settled") if len(per) == 1 else None,
              "evaluators": {k: MEASURES[k] for k in dict.fromkeys((fits, *(
                  ("delta_s1",) if fits == "rbd_fast" else ()), "fanova", "ped_anova"))},
              "note": "no design: Sobol' and Morris indices from a design this tool ran need sensitivity sweep SPACE "
                      "--design sobol|morris; here, indices from the trials given"}
    if within is not None:
        record["within"] = f"{within[0]}={within[1]}"
        record["note"] = (f"within {within[0]}={within[1]}: the trials with that value, {within[0]} left out "
                          "(Sobol' and Morris indices of a design cannot be conditioned on a factor)")
    if len(per) == 1:
        record["parameters"] = next(iter(per.values()))["parameters"]
    return record


def _cell(values) -> str:
    if values is None:
        return "-"
    est, low, high = values
    return f"{est:.3f} [{low:.3f}, {high:.3f}]" if math.isfinite(low) else f"{est:.3f}"


def plain_text(study_name: str, record: dict) -> str:
    """The record as the command prints it."""
    sampling = record["sampling"]
    lines = [f"study {study_name}: objective {record['objective']} ({record['direction']}), {record['n']} complete "
             "trials",
             f"sampling: {sampling['family']} ({sampling['sampler']}): {sampling['why']}",
             f"method: {record['method']}", record["total"], record["note"], "estimators (95% intervals):",
             *(f"  {LABELS[k]}: {v}" for k, v in record["evaluators"].items())]
    keys = list(record["evaluators"])
    for group, r in record["per_group"].items():
        size = f"{r['n']} complete trials" + (f" in {r['configurations']} configurations"
                                              if r.get("configurations", r["n"]) != r["n"] else "")
        lines.append(f"\n{group}: {size}")
        if not r["parameters"] and r.get("why"):
            lines.append(f"  no importance: {r['why']}")
            continue
        for key in ("warning", "repeated"):
            if r.get(key):
                lines.append(f"  {key if key == 'warning' else 'seeds'}: {r[key]}")
        if r.get("subsample"):
            lines.append(f"  given-data indices on a seeded subsample of {r['subsample'][0]} of {r['subsample'][1]} "
                         "configurations")
        if r.get("fanova_subsample"):
            lines.append(f"  fANOVA and PED-ANOVA on a seeded subsample of {r['fanova_subsample'][0]} of "
                         f"{r['fanova_subsample'][1]} configurations")
        shown = [k for k in keys if any(k in p for p in r["parameters"].values())]
        lines.append(f"  {'parameter':<14} " + " ".join(f"{LABELS[k]:<32}" for k in shown))
        first = r["fits"] if r["fits"] in shown else shown[0]
        for name, v in sorted(r["parameters"].items(), key=lambda kv: -(kv[1].get(first) or [0])[0]):
            lines.append(f"  {name:<14} " + " ".join(f"{_cell(v.get(k)):<32}" for k in shown))
        if "settled" in r:
            state = "settled" if r["settled"] else "not settled"
            lines.append(f"  ranking by {LABELS[r['fits']]}: {state}: {r.get('why', '')}")
        if r.get("rests_on"):
            rests = r["rests_on"]
            lines.append(f"  {LABELS[r['fits']]} rests on {rests['trials']} trials ({rests['configurations']} "
                         "configurations)" + (f"; {r['visited']:.0%} of the prior design lies near a trial: where none "
                                              "is, the surrogate's guess is in no interval" if "visited" in r else ""))
        if r.get("agreement"):
            lines.append(f"  {LABELS['rbd_fast']} and {LABELS['delta_s1']}: {r['agreement']['sentence']}")
        for evaluator, error in r.get("errors", {}).items():
            lines.append(f"  {LABELS.get(evaluator, evaluator)} not computed: {error}")
    return "\n".join(lines)
