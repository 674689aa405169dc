"""First-order sensitivity indices from given data: the trials a study already has, where they are independent draws
from the prior (random, QMC, grid; `sampling`), through SALib's public API.

What each measures, for the objective Y of parameters X1..Xk drawn from their priors:
- S1 by RBD-FAST (`RbdFastEvaluator`, the estimator that fits independent draws): the share of Var(Y) that Xi
  explains alone, Var(E[Y|Xi]) / Var(Y). SALib's `rbd_fast.analyze` orders the trials along Xi and reads the
  power of the first M harmonics of Y in that order (Plischke's EASI), with Tissot and Prieur's bias correction; its
  95% interval is est -/+ z * the spread of the estimate over half-size resamples of the trials (conservative: a
  half-size resample spreads sqrt(2) times wider). On a categorical parameter RBD-FAST's order means nothing: there
  S1 is the between-levels share of variance, corrected for its bias ((SSB - (L-1) MSW) / SST, epsilon squared),
  with a bootstrap interval.
- S1 by SALib's delta module (`DeltaEvaluator`, method "sobol"): the same index by equal-frequency bins of Xi, not
  corrected for its upward bias (about the number of bins over the number of trials): a second estimator of the
  same question, read for agreement only. The delta measure itself (Borgonovo's, moment-independent) took 36 s on
  2,000 trials with 20 resamples here, so it is not computed.
- Total indices: none. No given-data estimator here was shown to cover ST at 90%; TOTAL_NEEDS_DESIGN says so.

Where seeds repeat (one configuration run more than once), the unit is the configuration: its trials' mean is one
row, so every interval resamples configurations, not trials. Past GIVEN_MAX configurations, a seeded subsample of
that many (the record says N of M). Each evaluator's `Ranking` carries the estimate over RANKING_RESAMPLES full-size
bootstrap resamples of the configurations, from which `Ranking.verdict` reads whether the ranking is settled.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from typing import NamedTuple

import numpy as np

from sensitivity.analysis.rankings.base import Estimate, Evaluator, Ranking
from sensitivity.analysis.rankings.sampling import configuration_key, prior_units
from sensitivity.analysis.statistics import z_quantile

HARMONICS = 10  # RBD-FAST's M, SALib's default
RESAMPLES = 100  # SALib's resamples behind its interval
RANKING_RESAMPLES = 100  # full-size bootstrap resamples of the configurations behind a ranking's verdict
CONFIDENCE = 0.95
GIVEN_MAX = 5_000  # configurations: RBD-FAST costs about 0.25 s on 2,000 with its interval
MIN_GIVEN = 50  # configurations a given-data index needs (RBD-FAST's bias correction needs N well above 2M)
TOTAL_NEEDS_DESIGN = ("total indices need a design: no given-data estimator here was shown to cover ST at 90% "
                      "(sensitivity sweep SPACE --design sobol runs one)")


class GivenData(NamedTuple):
    """Trials as given-data estimators take them: one row per configuration."""
    names: tuple  # the parameters
    X: np.ndarray  # configurations x parameters: a numeric value in prior units (`sampling.prior_units`), a
    # categorical one as its level's index
    Y: np.ndarray  # the objective, the mean of a configuration's trials
    categorical: tuple  # per parameter, whether it is categorical
    trials: int  # the trials behind the rows
    configurations: int  # rows before any subsample (GIVEN_MAX)
    representatives: tuple = ()  # the first trial of each row's configuration

    @property
    def repeated(self) -> bool:
        return self.trials > len(self.Y)


def given_data(trials: list, names: list, values: list, seed: int = 0, cap: int = GIVEN_MAX) -> GivenData:
    """The rows of `trials` (frozen trials holding every one of `names`) with objective `values` (one per trial):
    configurations averaged, values mapped to prior units, at most `cap` configurations (seeded)."""
    groups: dict = {}
    for trial, value in zip(trials, values):
        groups.setdefault(configuration_key(trial, names), []).append((trial, value))
    rows = list(groups.values())
    total = len(rows)
    rng = np.random.default_rng(seed)
    if total > cap:
        rows = [rows[i] for i in sorted(rng.choice(total, cap, replace=False))]
    first = [members[0][0] for members in rows]
    columns, categorical = [], []
    for name in names:
        dist = first[0].distributions[name]
        if hasattr(dist, "choices"):
            columns.append(np.array([dist.to_internal_repr(t.params[name]) for t in first], dtype=float))
            categorical.append(True)
        else:  # ties (steps, integers) spread over their step at random: the order RBD-FAST reads is then fair
            columns.append(prior_units(np.array([t.params[name] for t in first], dtype=float), dist, rng))
            categorical.append(False)
    X = np.column_stack(columns) if columns else np.empty((len(rows), 0))
    Y = np.array([np.mean([v for _, v in members]) for members in rows], dtype=float)
    return GivenData(tuple(names), X, Y, tuple(categorical), sum(len(m) for m in rows), total, tuple(first))


def check_enough(sample: GivenData, needed: int = MIN_GIVEN, what: str = "given-data indices") -> None:
    """ValueError, naming what is needed, for too few configurations or a constant objective."""
    if len(sample.Y) < needed:
        unit = "configurations" if sample.repeated else "complete trials"
        raise ValueError(f"{what} need at least {needed} {unit}; there are {len(sample.Y)}")
    if np.ptp(sample.Y) == 0:
        raise ValueError("the objective is constant over the trials: no variance to attribute")


def _problem(names) -> dict:
    return {"num_vars": len(names), "names": list(names), "bounds": [[0.0, 1.0]] * len(names)}


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def epsilon_squared(codes: np.ndarray, Y: np.ndarray) -> float:
    """The between-levels share of Var(Y), corrected for its bias: (SSB - (L-1) MSW) / SST over L levels present
    (the first-order index of a categorical parameter drawn uniformly over its levels)."""
    levels, index = np.unique(codes, return_inverse=True)
    n, k = len(Y), len(levels)
    total = float(np.sum((Y - Y.mean()) ** 2))
    if k < 2 or n <= k or total == 0:
        return 0.0
    counts = np.bincount(index)
    means = np.bincount(index, weights=Y) / counts
    between = float(np.sum(counts * (means - Y.mean()) ** 2))
    within = (total - between) / (n - k)
    return (between - (k - 1) * within) / total


def rbd_first_order(X: np.ndarray, Y: np.ndarray, categorical: tuple) -> np.ndarray:
    """S1 per column: RBD-FAST (SALib, bias-corrected) on the numeric ones, epsilon squared on the categorical."""
    # lazy: SALib
    from SALib.analyze import rbd_fast

    out = np.empty(X.shape[1])
    numeric = [j for j, c in enumerate(categorical) if not c]
    if numeric:
        with _quiet():
            found = rbd_fast.analyze(_problem([str(j) for j in numeric]), X[:, numeric], Y, M=HARMONICS,
                                     num_resamples=2, seed=1)
        out[numeric] = found["S1"]
    for j, c in enumerate(categorical):
        if c:
            out[j] = epsilon_squared(X[:, j], Y)
    return out


def bootstrap(statistic, sample: GivenData, resamples: int, seed: int, size=None) -> np.ndarray:
    """`statistic(X, Y)` over `resamples` resamples of the rows with replacement (of `size`, default all)."""
    rng = np.random.default_rng(seed)
    n = len(sample.Y)
    out = []
    for _ in range(resamples):
        rows = rng.integers(n, size=size or n)
        out.append(statistic(sample.X[rows], sample.Y[rows]))
    return np.array(out).reshape(resamples, -1)


class RbdFastEvaluator(Evaluator):
    """S1 by SALib's RBD-FAST (numeric parameters) and epsilon squared (categorical ones), from given data."""
    name, label = "rbd_fast", "S1 (RBD-FAST)"
    measures = ("the share of the objective's variance a parameter explains alone (first-order Sobol' index), from "
                "independent draws by SALib's RBD-FAST with its bias correction")

    def __init__(self, resamples: int = RESAMPLES, ranking_resamples: int = RANKING_RESAMPLES):
        self.resamples, self.ranking_resamples = resamples, ranking_resamples

    def evaluate(self, sample: GivenData, params=None, *, seed: int = 0) -> Ranking:
        """S1 with 95% intervals per parameter of `sample`."""
        # lazy: SALib
        from SALib.analyze import rbd_fast

        check_enough(sample)
        z = float(z_quantile(0.5 + CONFIDENCE / 2))
        X, Y, cat = sample.X, sample.Y, sample.categorical
        estimates = [None] * len(sample.names)
        numeric = [j for j, c in enumerate(cat) if not c]
        if numeric:
            with _quiet():
                found = rbd_fast.analyze(_problem([sample.names[j] for j in numeric]), X[:, numeric], Y,
                                         M=HARMONICS, num_resamples=self.resamples, conf_level=CONFIDENCE,
                                         seed=seed + 1)
            for k, j in enumerate(numeric):
                estimates[j] = Estimate(float(found["S1"][k]), float(found["S1"][k] - found["S1_conf"][k]),
                                        float(found["S1"][k] + found["S1_conf"][k]))
        replicates = bootstrap(lambda x, y: rbd_first_order(x, y, cat), sample, self.ranking_resamples, seed)
        for j, c in enumerate(cat):
            if c:  # epsilon squared: est -/+ z * its bootstrap spread over the configurations
                value, spread = epsilon_squared(X[:, j], Y), float(np.std(replicates[:, j], ddof=1))
                estimates[j] = Estimate(value, value - z * spread, value + z * spread)
        return Ranking(sample.names, tuple(estimates), replicates, "S1", size=len(Y))


class DeltaEvaluator(Evaluator):
    """S1 by SALib's delta module (equal-frequency bins of each numeric parameter, not bias-corrected), with SALib's
    interval: a second estimator of the first-order index, for agreement."""
    name, label = "delta_s1", "S1 (SALib delta's bins)"
    measures = ("the first-order index again, by equal-frequency bins (SALib's delta module): not corrected for its "
                "upward bias of about bins/trials, so read for agreement only")

    def __init__(self, resamples: int = RESAMPLES):
        self.resamples = resamples

    def evaluate(self, sample: GivenData, params=None, *, seed: int = 0) -> Ranking:
        """S1 with SALib's 95% interval per numeric parameter of `sample` (categorical ones left out)."""
        # lazy: SALib
        from SALib.analyze import delta

        check_enough(sample)
        numeric = [j for j, c in enumerate(sample.categorical) if not c]
        names = tuple(sample.names[j] for j in numeric)
        if not names:
            return Ranking((), (), np.empty((0, 0)), "S1", size=len(sample.Y))
        state = np.random.get_state()  # SALib's delta seeds numpy's global generator: put it back after
        try:
            with _quiet():
                found = delta.analyze(_problem(names), sample.X[:, numeric], sample.Y, num_resamples=self.resamples,
                                      conf_level=CONFIDENCE, seed=seed + 1, method="sobol")
        finally:
            np.random.set_state(state)
        return Ranking(names, tuple(Estimate(float(s), float(s - c), float(s + c))
                                    for s, c in zip(found["S1"], found["S1_conf"])),
                       np.empty((0, len(names))), "S1", size=len(sample.Y))


def agreement(first: Ranking, second: Ranking) -> dict:
    """{parameter: True where the two estimators' intervals of the same index overlap} over the parameters both
    give, and the sentence the output prints."""
    other = dict(zip(second.names, second.estimates))
    overlap = {name: bool(e.low <= other[name].high and other[name].low <= e.high)
               for name, e in zip(first.names, first.estimates) if name in other and math.isfinite(e.low)}
    apart = [n for n, ok in overlap.items() if not ok]
    sentence = (f"their intervals agree on every parameter ({len(overlap)})" if not apart else
                f"their intervals do not overlap for {', '.join(apart)} (of {len(overlap)})")
    return {"parameters": overlap, "agree": not apart, "sentence": sentence}
