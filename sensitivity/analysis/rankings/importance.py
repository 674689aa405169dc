"""Hyper-parameter importance for accuracy: PED-ANOVA (Optuna 5's default) and fANOVA with bounded trees, each
with a bootstrap interval, their rank agreement, and plain warnings where the ranking cannot be trusted.

Both run on the sampled trials that trained (ok and diverged: a diverged run's chance-level accuracy is what
its parameters earned), with the framework as one parameter among the others, once per regime (`semantics`).
Planned trials (framework defaults and their transfers, `table.planned_of`) are not samples of the space and
are left out; `planned_trials` lists them apart. Where the study tunes the regime as a parameter, a further
block "all" ranks it among the others over every sampled trial. PED-ANOVA minimises its target, so the trials
are given the negated accuracy; its importances are Optuna's, from each trial's grid cells found once for every
resample (`rankings.ped_anova`; Optuna walks every trial again at each one). fANOVA with Optuna's defaults (64
trees, depth 64) takes minutes on 10,000 trials; 16 trees of depth 8 take seconds and rank alike; its importances
are Optuna's, read from the leaves at once (`rankings.fanova`; Optuna walks each tree once per cell of a
parameter's splits: docs/performance.md). Past SUBSAMPLE_MAX (2,000) sampled trials in a block, both evaluators
run on a random subsample of that many (seeded; attrs `subsample` says N of M, and the report says so), and the
intervals are those of the subsample (wider than all trials would give): on 100,000 trials the bootstrap would
take minutes.

Intervals (95%, bootstrap over trials; `low`, `high`): each evaluator is run again on resamples of the trials
drawn with replacement, PED-ANOVA on RESAMPLES (50), fANOVA on FANOVA_RESAMPLES (20: a forest costs a fifth of a
second on a few hundred trials), at most BOOTSTRAP_MAX per resample (beyond that, subsamples of that size whose
spread about their own median is scaled by sqrt(m/n) about the estimate: their bias at m trials is not the
estimate's at n); the interval is the replicates' 2.5-97.5 percentiles. It is the interval of the forest's mean
importance, not the spread of its single trees (each fitted to a resample: far wider than the mean's own
uncertainty).
Settled (`ranking_verdict`, per block and evaluator): the top parameter leads in at least 90% of its bootstrap
resamples and its interval lies above the second's, as `indices.settled` decides for a design's ranking; fANOVA's
is the ranking of a study without a design (issue 30).
Rank agreement: Spearman's rho and Kendall's tau between the two evaluators' importances (3+ parameters).
Warnings: fewer than TRIALS_PER_PARAMETER (10) sampled trials per parameter; the evaluators ordering a pair
of parameters oppositely, each beyond its intervals; or putting different parameters first.
"""
from __future__ import annotations

import contextlib
import datetime
import importlib.util
import math
import warnings
from typing import NamedTuple

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import IntDistribution
from optuna.trial import FrozenTrial, TrialState

from sensitivity.analysis.rankings.base import Estimate, Evaluator, Ranking
from sensitivity.analysis.rankings import ped_anova
from sensitivity.analysis.rankings import fanova
from sensitivity.analysis.intervals import group_intervals
from sensitivity.analysis.tables.parameter_values import format_value, parameter_distributions
from sensitivity.analysis.table import (PARAM, REGIME, NotEnoughData, defaults_of, paused_collection, planned_of,
                                        regime_sorted, regimes_of, trained, trials_table)

EVALUATORS = ("ped_anova", "fanova")
LABELS = {"ped_anova": "PED-ANOVA", "fanova": "fANOVA"}
ALL = "all"  # the block over every trial, the regime among the parameters
COLUMNS = [REGIME, "evaluator", "parameter", "importance", "low", "high", "rank", "n_trials", "defaults"]
FANOVA_TREES, FANOVA_DEPTH = 16, 8
RESAMPLES, FANOVA_RESAMPLES, BOOTSTRAP_MAX = 50, 20, 500
MIN_REPLICATES = 10  # fewer resamples that vary in their parameters than this: no interval
SUBSAMPLE_MAX = 2_000
TRIALS_PER_PARAMETER = 10
NEEDS = "importance needs at least 2 complete trials with varied parameters"
NO_ACCURACY = ("importance here reads each trial's recorded accuracy, which none of these {n} complete trials has (a "
               "study another program wrote?); sensitivity importance STUDY gives fANOVA and PED-ANOVA on its own "
               "objective and parameters")
ONLY_PLANNED = ("importance needs sampled trials; this study's trials are all planned (framework defaults), "
                "which are not samples of the search space")


class Importance(NamedTuple):
    """A study's importance (`parameter_importance`), the importance figure's data. Fields:
    - rows: one row per block (`semantics`: each regime, then "all"), evaluator and parameter: importance (sums to 1
      per block and evaluator), low, high (its 95% bootstrap interval), rank (1 = most important), n_trials (sampled
      trials used), defaults (the framework defaults' values of the parameter, text)
    - agreement: one row per block of 3+ parameters: semantics, n_parameters, spearman, kendall
    - warnings: ((block, sentence), ...): where the ranking cannot be trusted
    - missing: {block: why it has no importance}
    - planned: planned trials (framework defaults) left out of the importance
    - subsample: {block: [n used, n sampled trials]} where a block had more than SUBSAMPLE_MAX
    - verdicts: {block: {evaluator: {settled, top, second, lead, resamples, why}}}: whether each evaluator's ranking
      is settled (`ranking_verdict`)
    """
    rows: pd.DataFrame
    agreement: pd.DataFrame
    warnings: tuple
    missing: dict
    planned: int
    subsample: dict
    verdicts: dict


def parameter_importance(table, evaluators=EVALUATORS, seed: int = 0, resamples: int = RESAMPLES) -> Importance:
    """The importance of each parameter per block (`Importance`): `semantics` names the block (each regime present,
    native first, then "all" where the study tunes the regime); past SUBSAMPLE_MAX sampled trials in a block,
    n_trials is the n used."""
    unknown = [name for name in evaluators if name not in STUDY_EVALUATORS]
    if unknown:
        raise ValueError(f"unknown importance evaluator {unknown[0]!r}; allowed: {', '.join(EVALUATORS)}")
    table = trials_table(table)
    everything = trained(table).dropna(subset=["accuracy"])
    if everything.empty and len(trained(table)):
        raise NotEnoughData(NO_ACCURACY.format(n=len(trained(table))))
    planned = planned_of(everything)
    rows = everything[~planned]
    if rows.empty and len(everything):
        raise NotEnoughData(ONLY_PLANNED)
    blocks = [(regime, rows[rows[REGIME].eq(regime)]) for regime in regimes_of(rows)]
    if PARAM + REGIME in rows and rows[PARAM + REGIME].nunique() > 1:
        blocks.append((ALL, rows))
    parts, missing, subsample, verdicts = [], {}, {}, {}
    for name, block in blocks:
        if len(block) > SUBSAMPLE_MAX:
            subsample[name] = [SUBSAMPLE_MAX, len(block)]
            block = block.sample(SUBSAMPLE_MAX, random_state=seed).sort_index()
        try:
            part, verdicts[name] = block_importance(block, evaluators, seed, regime=name == ALL, resamples=resamples)
        except NotEnoughData as reason:
            missing[name] = str(reason)
            continue
        defaults = _default_values(everything if name == ALL else everything[everything[REGIME].eq(name)],
                                   [p for p in part["parameter"] if p != REGIME])
        parts.append(part.assign(**{REGIME: name, "defaults": [defaults.get(p, "") for p in part["parameter"]]}))
    if not parts:
        raise NotEnoughData(NEEDS)
    out = pd.concat(parts, ignore_index=True)[COLUMNS]
    return Importance(out, pd.DataFrame(rank_agreement(out).to_dict("records")),
                      tuple(tuple(w) for w in importance_warnings(out)), missing, int(planned.sum()), subsample,
                      verdicts)


def block_importance(rows: pd.DataFrame, evaluators=EVALUATORS, seed: int = 0, regime: bool = False,
                     resamples: int = RESAMPLES) -> tuple:
    """(importance over `rows` of the parameters that vary in them (the regime only when `regime`), with the
    intervals of the module; {evaluator: `ranking_verdict`})."""
    distributions = {n: d for n, d in parameter_distributions(rows).items()
                     if rows[PARAM + n].nunique() > 1 and (regime or n != REGIME)}
    if len(rows) < 2 or not distributions:
        raise NotEnoughData(NEEDS)
    # thousands of frozen trials and resamples, freed by their reference counts: `paused_collection`
    with paused_collection():
        with _quiet_optuna():
            trials = _negated_accuracy_trials(rows, distributions)
        everywhere = [n for n in distributions if rows[PARAM + n].notna().all()]  # fANOVA needs them in every trial
        results, verdicts = [], {}
        for name in evaluators:
            params = list(distributions) if name == "ped_anova" else everywhere
            if not params:
                continue
            ranking = STUDY_EVALUATORS[name](resamples).evaluate(trials, params, seed=seed)
            order = sorted(zip(ranking.names, ranking.estimates), key=lambda item: -item[1].value)
            for rank, (param, estimate) in enumerate(order, start=1):
                results.append({"evaluator": name, "parameter": param, "importance": float(estimate.value),
                                "low": estimate.low, "high": estimate.high, "rank": rank, "n_trials": len(rows)})
            verdicts[name] = verdict_record(ranking)
    out = pd.DataFrame(results, columns=["evaluator", "parameter", "importance", "low", "high", "rank", "n_trials"])
    return out, verdicts


def ranking_verdict(scores: dict, spread: dict, replicates: np.ndarray) -> dict:
    """`verdict_record` of an evaluator's scores {parameter: value}, their intervals {parameter: (low, high)} ({}
    where none) and bootstrap replicates."""
    names = tuple(scores)
    return verdict_record(Ranking(names, tuple(Estimate(scores[p], *spread.get(p, (math.nan, math.nan)))
                                               for p in names), replicates if spread else replicates[:0]))


def verdict_record(ranking: Ranking) -> dict:
    """Whether a ranking is settled (`base.settled`: its top parameter leads in at least 90% of the bootstrap
    resamples and its interval lies above the second's), as plain values: settled, top, second, lead (the share
    of resamples it leads), resamples, why."""
    if len(ranking.replicates) == 0:
        top = ranking.names[max(range(len(ranking.names)), key=lambda j: ranking.estimates[j].value)]
        return {"settled": False, "top": top, "second": None, "lead": None, "resamples": 0,
                "why": "no bootstrap interval (too few resamples varied in their parameters)"}
    verdict = ranking.verdict()
    return {"settled": bool(verdict.settled), "top": verdict.top, "second": verdict.second,
            "lead": round(verdict.lead, 3), "resamples": int(len(ranking.replicates)), "why": verdict.why}


class PedAnovaEvaluator(Evaluator):
    """Optuna's PED-ANOVA (its defaults, as `rankings.ped_anova` computes them) on the negated accuracy, with a
    bootstrap interval over trials."""
    name, label = "ped_anova", "PED-ANOVA"
    measures = "how far a parameter's distribution among the top trials departs from its distribution over all"

    def __init__(self, resamples: int = RESAMPLES):
        self.resamples = resamples

    def evaluate(self, sample: list, params=None, *, seed: int = 0) -> Ranking:
        """The ranking of `params` (default: every parameter of `sample`) over the frozen trials `sample`."""
        names = list(params) if params is not None else sorted({p for t in sample for p in t.distributions})
        data = ped_anova.cells(sample, names)  # each trial's regime and grid cell found once for every resample
        return _ranking(lambda index: ped_anova.importances(data, index), sample, seed, self.resamples, self.label)


class FanovaEvaluator(Evaluator):
    """fANOVA with bounded trees as Optuna computes it (`rankings.fanova`: the same forest and importances, read
    from the leaves at once), its importances normalised to sum to 1, with a bootstrap interval of the forest's
    mean importance (a forest refitted on each resample)."""
    name, label = "fanova", "fANOVA"
    measures = "the share of the objective's variance a parameter's main effect explains, in a random forest"

    def __init__(self, resamples: int = FANOVA_RESAMPLES):
        self.resamples = min(resamples, FANOVA_RESAMPLES)

    def evaluate(self, sample: list, params=None, *, seed: int = 0) -> Ranking:
        """The ranking of `params` over the frozen trials `sample`."""
        if importlib.util.find_spec("sklearn") is None:  # fANOVA's random forest
            raise ImportError("fANOVA needs scikit-learn: pip install 'sensitivity[data]'")
        names = list(params) if params is not None else sorted(set.intersection(*(set(t.params) for t in sample)))

        encoded = fanova.Encoded.of(sample, names)  # once: a resample is a choice of its rows

        def evaluate(index):
            raw = encoded.importances(index, trees=FANOVA_TREES, depth=FANOVA_DEPTH, seed=seed)
            total = sum(raw.values())
            return {p: (v / total if total > 0 else 0.0) for p, v in raw.items()}
        return _ranking(evaluate, sample, seed, self.resamples, self.label)


STUDY_EVALUATORS = {"ped_anova": PedAnovaEvaluator, "fanova": FanovaEvaluator}


def _ranking(evaluate, trials: list, seed: int, resamples: int, label: str) -> Ranking:
    """The ranking of `evaluate`'s scores on `trials` (`evaluate` takes an array of positions in `trials`), with
    the intervals and replicates of `_bootstrap`."""
    scores = evaluate(np.arange(len(trials)))
    spread, replicates = _bootstrap(evaluate, len(trials), scores, seed, resamples)
    names = tuple(scores)
    return Ranking(names, tuple(Estimate(float(scores[p]), *spread.get(p, (math.nan, math.nan))) for p in names),
                   replicates, label, size=len(trials))


def _bootstrap(evaluate, n: int, scores: dict, seed: int, resamples: int) -> tuple:
    """({parameter: (low, high)}, the replicates: resamples x parameters in the order of `scores`): the 2.5-97.5
    percentiles of `evaluate` over `resamples` resamples of the n trials with replacement (at most BOOTSTRAP_MAX each;
    a smaller subsample's spread about its median scaled by sqrt(m/n) about the estimate), clipped to [0, 1]; ({},
    empty) where fewer than MIN_REPLICATES resamples could be evaluated (a parameter without variation)."""
    rng = np.random.default_rng(seed)
    m = min(n, BOOTSTRAP_MAX)
    replicates = []
    for _ in range(resamples):
        index = rng.choice(n, size=m, replace=m == n)
        try:
            replicates.append(evaluate(index))
        except (ValueError, RuntimeError):  # a resample without variation in a parameter
            continue
    matrix = np.array([[r.get(param, 0.0) for param in scores] for r in replicates]).reshape(-1, len(scores))
    if len(replicates) < min(MIN_REPLICATES, resamples):
        return {}, matrix[:0]
    scale = math.sqrt(m / n)
    spread = {}
    for j, (param, estimate) in enumerate(scores.items()):
        low, high = np.percentile(matrix[:, j], [2.5, 97.5])
        # a subsample's replicates are centred on their own median: the estimators' bias at m trials (dummy
        # parameters read higher on fewer trials) is not theirs at n, and only the spread scales as sqrt(m/n)
        centre = estimate if m == n else float(np.median(matrix[:, j]))
        spread[param] = (max(0.0, estimate + scale * (low - centre)), min(1.0, estimate + scale * (high - centre)))
    return spread, matrix


def rank_agreement(importance: pd.DataFrame) -> pd.DataFrame:
    """Per block: Spearman's rho and Kendall's tau between fANOVA's and PED-ANOVA's importances of the
    parameters both evaluated (NaN under 3 parameters)."""
    # lazy: scipy
    from scipy import stats

    rows = []
    for block, part in importance.groupby(REGIME, sort=False):
        both = part.pivot(index="parameter", columns="evaluator", values="importance").dropna()
        if not set(EVALUATORS) <= set(both.columns):
            continue
        a, b = both["fanova"].to_numpy(), both["ped_anova"].to_numpy()
        enough = len(both) >= 3 and np.ptp(a) > 0 and np.ptp(b) > 0
        rows.append({REGIME: block, "n_parameters": len(both),
                     "spearman": float(stats.spearmanr(a, b)[0]) if enough else math.nan,
                     "kendall": float(stats.kendalltau(a, b)[0]) if enough else math.nan})
    return pd.DataFrame(rows, columns=[REGIME, "n_parameters", "spearman", "kendall"])


def importance_warnings(importance: pd.DataFrame) -> list:
    """[(block, sentence)]: too few trials for the parameters, and evaluators that disagree."""
    out = []
    for block, part in importance.groupby(REGIME, sort=False):
        n, k = int(part["n_trials"].max()), int(part["parameter"].nunique())
        if n < TRIALS_PER_PARAMETER * k:
            out.append((block, f"Only {n} sampled trials for {k} parameters (the rule here: at least "
                               f"{TRIALS_PER_PARAMETER} per parameter, {TRIALS_PER_PARAMETER * k}): neither ranking "
                               "is reliable."))
        by = {e: rows.set_index("parameter") for e, rows in part.groupby("evaluator")}
        if set(EVALUATORS) - set(by):
            continue
        clash = _opposite_beyond_intervals(by["fanova"], by["ped_anova"])
        if clash:
            p, q = clash
            out.append((block, f"The evaluators disagree beyond their intervals: fANOVA ranks {p} above {q}, "
                               f"PED-ANOVA {q} above {p}."))
        firsts = {e: rows["importance"].idxmax() for e, rows in by.items()}
        if firsts["fanova"] != firsts["ped_anova"] and not clash:
            out.append((block, f"The evaluators put different parameters first (fANOVA: {firsts['fanova']}, "
                               f"PED-ANOVA: {firsts['ped_anova']}) within their intervals: the ranking is not "
                               "settled."))
    return out


def _opposite_beyond_intervals(a: pd.DataFrame, b: pd.DataFrame):
    """A pair (p, q) that `a` puts above each other beyond the intervals, and `b` the other way round."""
    common = [p for p in a.index if p in b.index]
    for p in common:
        for q in common:
            if p != q and a.loc[p, "low"] > a.loc[q, "high"] and b.loc[q, "low"] > b.loc[p, "high"]:
                return p, q
    return None


def planned_trials(table) -> pd.DataFrame:
    """The planned trials left out of the importance, one row per framework, regime and configuration: the
    default's name where it has one, n and mean accuracy with its interval."""
    table = trials_table(table)
    rows = trained(table)
    rows = rows[planned_of(rows)]
    if rows.empty:
        return pd.DataFrame(columns=["framework", REGIME, "configuration", "accuracy_mean", "accuracy_low",
                                     "accuracy_high", "accuracy_n"])
    label = rows["default"] if "default" in rows else rows["config_id"]
    rows = rows.assign(configuration=label.where(label.notna(), rows["config_id"]).astype(str))
    out = group_intervals(rows, ["framework", REGIME, "configuration"], "accuracy")
    return regime_sorted(out.drop(columns="accuracy_method"), [REGIME, "framework", "configuration"])


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
    return {n: "; ".join(f"{fw} {format_value(v)}" for fw, v in zip(defaults["framework"], defaults[PARAM + n])
                         if v == v and v is not None)
            for n in names if PARAM + n in defaults} if len(defaults) else {}


def _negated_accuracy_trials(rows: pd.DataFrame, distributions: dict) -> list:
    """The rows as COMPLETE frozen trials whose value is -accuracy (minimised)."""
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
    return trials
