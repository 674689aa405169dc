"""Hyper-parameter importance for accuracy: PED-ANOVA (Optuna 5's default) and fANOVA with bounded trees.

Both run on the trained trials (ok and diverged: a diverged run's chance-level accuracy is what its
parameters earned) with the framework as one parameter among the others, once per regime (`semantics`):
what matters under the frameworks' own optimizers need not matter under the canonical formulas. Where the
study tunes the regime as a parameter (`param_semantics` varies), a further block "all" ranks it among
the others over every trial. PED-ANOVA minimises its target, so the trials are given the negated accuracy.
fANOVA with Optuna's defaults (64 trees, depth 64) takes minutes on 10,000 trials; 16 trees of depth 8
take seconds and rank alike.
"""
from __future__ import annotations

import contextlib
import datetime
import importlib.util
import warnings

import optuna
import pandas as pd
from optuna.distributions import IntDistribution
from optuna.trial import FrozenTrial, TrialState

from sensitivity.analysis.table import (PARAM, REGIME, NotEnoughData, defaults_of, format_value,
                                        parameter_distributions, regimes_of, trained, trials_table)

EVALUATORS = ("ped_anova", "fanova")
ALL = "all"  # the block over every trial, the regime among the parameters
COLUMNS = [REGIME, "evaluator", "parameter", "importance", "rank", "n_trials", "defaults"]
FANOVA_TREES, FANOVA_DEPTH = 16, 8
NEEDS = "importance needs at least 2 complete trials with varied parameters"


def make_evaluator(name: str, seed: int = 0):
    import optuna.importance as importance  # imports scikit-learn (seconds): only when importance is asked

    if name == "ped_anova":
        return importance.PedAnovaImportanceEvaluator()
    if name == "fanova":
        if importlib.util.find_spec("sklearn") is None:  # fANOVA's random forest
            raise ImportError("fANOVA needs scikit-learn: pip install 'sensitivity[data]'")
        return importance.FanovaImportanceEvaluator(n_trees=FANOVA_TREES, max_depth=FANOVA_DEPTH, seed=seed)
    raise ValueError(f"unknown importance evaluator {name!r}; allowed: {', '.join(EVALUATORS)}")


def parameter_importance(table, evaluators=EVALUATORS, seed: int = 0) -> pd.DataFrame:
    """One row per block, evaluator and parameter: `semantics` names the block (each regime present, native
    first, then "all" where the study tunes the regime), importance (summing to 1 per block and evaluator),
    rank (1 = most important), n_trials, and the framework defaults' values of the parameter where known.
    `attrs["missing"]` says why a block is absent ({block: reason}); with no block at all, NotEnoughData."""
    rows = trained(trials_table(table)).dropna(subset=["accuracy"])
    blocks = [(regime, rows[rows[REGIME].eq(regime)]) for regime in regimes_of(rows)]
    if PARAM + REGIME in rows and rows[PARAM + REGIME].nunique() > 1:
        blocks.append((ALL, rows))
    parts, missing = [], {}
    for name, block in blocks:
        try:
            parts.append(block_importance(block, evaluators, seed, regime=name == ALL).assign(**{REGIME: name}))
        except NotEnoughData as reason:
            missing[name] = str(reason)
    if not parts:
        raise NotEnoughData(NEEDS)
    out = pd.concat(parts, ignore_index=True)[COLUMNS]
    out.attrs["missing"] = missing
    return out


def block_importance(rows: pd.DataFrame, evaluators=EVALUATORS, seed: int = 0, regime: bool = False):
    """Importance over `rows`, of the parameters that vary in them (the regime only when `regime`)."""
    distributions = {n: d for n, d in parameter_distributions(rows).items()
                     if rows[PARAM + n].nunique() > 1 and (regime or n != REGIME)}
    if len(rows) < 2 or not distributions:
        raise NotEnoughData(NEEDS)
    with _quiet_optuna():
        study = _negated_accuracy_study(rows, distributions)
    everywhere = [n for n in distributions if rows[PARAM + n].notna().all()]  # fANOVA needs them in every trial
    results = []
    for name in evaluators:
        params = list(distributions) if name == "ped_anova" else everywhere
        if not params:
            continue
        with _quiet_optuna():
            scores = optuna.importance.get_param_importances(study, evaluator=make_evaluator(name, seed),
                                                             params=params)
        for rank, (param, score) in enumerate(sorted(scores.items(), key=lambda kv: -kv[1]), start=1):
            results.append({"evaluator": name, "parameter": param, "importance": float(score), "rank": rank,
                            "n_trials": len(rows)})
    out = pd.DataFrame(results, columns=["evaluator", "parameter", "importance", "rank", "n_trials"])
    defaults = _default_values(rows, [n for n in distributions if n != REGIME])  # defaults run in every regime
    out["defaults"] = [defaults.get(p, "") for p in out["parameter"]]
    return out


@contextlib.contextmanager
def _quiet_optuna():
    """Without Optuna's log lines and its small-sample and experimental-feature warnings."""
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(level)


def _default_values(rows: pd.DataFrame, names: list) -> dict:
    """{parameter: "torch 0.01; tensorflow 0.001"}, the framework defaults' values, for marking them."""
    defaults = rows[defaults_of(rows)].drop_duplicates("framework")
    return {n: "; ".join(f"{fw} {format_value(v)}" for fw, v in zip(defaults["framework"], defaults[PARAM + n]))
            for n in names} if len(defaults) else {}


def _negated_accuracy_study(rows: pd.DataFrame, distributions: dict) -> "FrozenTrialsStudy":
    """A read-only study of the rows, each a COMPLETE trial whose value is -accuracy (minimised)."""
    now = datetime.datetime.now()
    columns = {n: rows[PARAM + n].tolist() for n in distributions}
    trials = []
    for i, accuracy in enumerate(rows["accuracy"].tolist()):
        params, dists = {}, {}
        for name, dist in distributions.items():
            value = columns[name][i]
            if value is None or value != value:  # a conditional parameter this trial did not use
                continue
            params[name] = int(value) if isinstance(dist, IntDistribution) else value
            dists[name] = dist
        trials.append(FrozenTrial(number=i, trial_id=i, state=TrialState.COMPLETE, value=-accuracy,
                                  datetime_start=now, datetime_complete=now, params=params, distributions=dists,
                                  user_attrs={}, system_attrs={}, intermediate_values={}))
    return FrozenTrialsStudy(trials)


class FrozenTrialsStudy(optuna.Study):
    """A minimising study serving a fixed list of trials. The evaluators read trials through `get_trials`;
    telling 10,000 trials to a real storage would cost seconds of copies."""

    def __init__(self, trials: list):
        storage = optuna.storages.InMemoryStorage()
        storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "trials-table")
        super().__init__(study_name="trials-table", storage=storage)
        self._frozen_trials = trials

    def get_trials(self, deepcopy: bool = True, states=None) -> list:
        return [t for t in self._frozen_trials if states is None or t.state in states]
