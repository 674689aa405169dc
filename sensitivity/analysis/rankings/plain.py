"""Importance on a study without a design (any Optuna study, one another program wrote included): Optuna's
fANOVA and PED-ANOVA, per framework where the trials have a `framework` parameter, else over all trials as one
group with the study's own parameters, the objective read from the trials' values (issue 30).

What each answers, and why they can disagree:
- fANOVA: the share of the objective's variance each parameter explains alone (its main effect), in a random
  forest fitted to the trials (FANOVA_TREES trees of depth FANOVA_DEPTH). On a space-filling sample it orders
  parameters as first-order Sobol' indices do; interactions are not in it.
- PED-ANOVA: how far a parameter's distribution among the top 10% of trials departs from its distribution over
  all trials: what puts a trial near the best, not what explains the variance.
Point estimates only (no interval here); Sobol' and Morris indices with intervals need a design (`sweep
--design`).
"""
from __future__ import annotations

import math
from typing import Optional

from sensitivity.analysis.rankings.designed import objective_index
from sensitivity.analysis.rankings.importance import FANOVA_DEPTH, FANOVA_TREES, TRIALS_PER_PARAMETER, make_evaluator

ALL_TRIALS = "all trials"
MIN_TRIALS = 2


def groups_of(trials: list) -> dict:
    """{group: trials}: by the `framework` parameter where every trial has one, else one group."""
    if trials and all("framework" in t.params for t in trials):
        groups: dict = {}
        for t in trials:
            groups.setdefault(str(t.params["framework"]), []).append(t)
        return groups
    return {ALL_TRIALS: trials}


def _group_importance(trials: list, index: int, direction, seed: int, leave_out=()) -> dict:
    # lazy: optuna
    import optuna

    names = sorted({n for t in trials for n in t.params if n not in ("framework", *leave_out)})
    varied = [n for n in names if len({repr(t.params.get(n)) for t in trials}) > 1
              and all(n in t.params for t in trials)]
    record = {"n": len(trials), "parameters": {}}
    if len(trials) < MIN_TRIALS or not varied:
        record["why"] = (f"{len(trials)} complete trial(s) with {len(varied)} parameter(s) that vary in all of them: "
                         "importance needs at least 2 trials and 1 varied parameter")
        return record
    if len(trials) < TRIALS_PER_PARAMETER * len(varied):
        record["warning"] = (f"{len(trials)} trials for {len(varied)} parameters, fewer than {TRIALS_PER_PARAMETER} a "
                             "parameter: the importances may change with more trials")
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "a new study created in memory" line
    try:
        copy = optuna.create_study(direction=direction)
    finally:
        optuna.logging.set_verbosity(verbosity)
    copy.add_trials([optuna.trial.create_trial(params={n: t.params[n] for n in varied},
                                               distributions={n: t.distributions[n] for n in varied},
                                               value=t.values[index]) for t in trials])
    for evaluator in ("fanova", "ped_anova"):
        try:
            found = optuna.importance.get_param_importances(copy, evaluator=make_evaluator(evaluator, seed),
                                                            params=varied, normalize=True)
        except (ImportError, ValueError, RuntimeError) as exc:  # scikit-learn missing; a degenerate sample
            record.setdefault("errors", {})[evaluator] = str(exc).splitlines()[0]
            continue
        for name in varied:
            record["parameters"].setdefault(name, {})[evaluator] = round(float(found.get(name, 0.0)), 6)
    return record


def within_of(text: str) -> tuple:
    """PARAM=VALUE of --within; ValueError (a sentence) otherwise."""
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise ValueError(f"--within {text!r}: expected PARAM=VALUE (e.g. optimizer=adam)")
    return name, value


def _matches(trial, within) -> bool:
    name, value = within
    return name in trial.params and str(trial.params[name]) == value


def plain_importance(study, objective: Optional[str] = None, seed: int = 0, within: Optional[tuple] = None) -> dict:
    """The JSON record: objective, evaluators' meaning, per_group {G: {n, parameters {NAME: {fanova,
    ped_anova}}}}; `parameters` at the top where there is one group. `within` (PARAM, VALUE): only the trials
    with that value, PARAM left out (on a designed study too: Sobol' indices cannot be conditioned on one of
    the design's factors, its points then being no Saltelli design; fANOVA and PED-ANOVA can)."""
    # lazy: optuna
    from optuna.trial import TrialState

    index, metric = objective_index(study, objective)
    trials = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
              if t.values is not None and len(t.values) > index and math.isfinite(t.values[index])]
    if within is not None:
        names = sorted({n for t in trials for n in t.params})
        if within[0] not in names:
            raise ValueError(f"--within {within[0]}={within[1]}: {within[0]!r} is not a parameter of study "
                             f"{study.study_name}; allowed: {', '.join(names)}")
        values = sorted({str(t.params[within[0]]) for t in trials if within[0] in t.params})
        trials = [t for t in trials if _matches(t, within)]
        if not trials:
            raise ValueError(f"--within {within[0]}={within[1]}: no complete trial has that value; allowed: "
                             f"{', '.join(values)}")
    direction = study.directions[index]
    per = {g: _group_importance(ts, index, direction, seed, within[:1] if within else ())
           for g, ts in groups_of(trials).items()}
    record = {"objective": metric, "design": None, "n": len(trials), "per_group": per, "settled": None,
              "evaluators": {"fanova": f"Optuna's fANOVA ({FANOVA_TREES} trees of depth {FANOVA_DEPTH}): the share "
                                       "of the objective's variance each parameter explains alone",
                             "ped_anova": "Optuna's PED-ANOVA: what puts a trial in the top 10%, not variance"},
              "note": "no design: Sobol' and Morris indices need one (sensitivity sweep SPACE --design sobol|morris); "
                      "point estimates, no intervals"}
    if within is not None:
        record["within"] = f"{within[0]}={within[1]}"
        record["note"] = (f"within {within[0]}={within[1]}: fANOVA and PED-ANOVA over the trials with that value "
                          "(Sobol' and Morris indices cannot be conditioned on a factor); point estimates, no "
                          "intervals")
    if len(per) == 1:
        record["parameters"] = next(iter(per.values()))["parameters"]
    return record


def plain_text(study_name: str, record: dict) -> str:
    lines = [f"study {study_name}: {record['note']}", f"objective {record['objective']}, {record['n']} complete trials",
             *(f"  {k}: {v}" for k, v in record["evaluators"].items())]
    for group, r in record["per_group"].items():
        lines.append(f"\n{group}: {r['n']} complete trials")
        if r.get("why"):
            lines.append(f"  no importance: {r['why']}")
            continue
        if r.get("warning"):
            lines.append(f"  warning: {r['warning']}")
        lines.append(f"  {'parameter':<16} {'fANOVA':>8} {'PED-ANOVA':>10}")
        ordered = sorted(r["parameters"].items(), key=lambda kv: -kv[1].get("fanova", 0.0))
        for name, v in ordered:
            fanova = f"{v['fanova']:.3f}" if "fanova" in v else "-"
            ped = f"{v['ped_anova']:.3f}" if "ped_anova" in v else "-"
            lines.append(f"  {name:<16} {fanova:>8} {ped:>10}")
        for evaluator, error in r.get("errors", {}).items():
            lines.append(f"  {evaluator} not computed: {error}")
    return "\n".join(lines)
