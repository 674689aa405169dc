"""Sobol' and Morris sensitivity indices over a designed study, through SALib's public API (issue 30).

What each index measures, for an objective Y of parameters X1..Xk:
- S1, the first-order Sobol' index of Xi: the share of Var(Y) that Xi explains alone, Var(E[Y|Xi]) / Var(Y).
- ST, the total-order index: the share Xi explains with all its interactions, E[Var(Y|X~i)] / Var(Y); ST - S1
  is what Xi contributes only jointly with others.
- S2, the second-order index of a pair: the share the pair explains jointly beyond each one's S1.
- Morris mu*: the mean absolute elementary effect (the change of Y over a step of Xi, in the design's units,
  averaged over trajectories): a screening measure, cheap, that ranks roughly as ST does; sigma, the spread of
  the effects, is large where Xi acts nonlinearly or through interactions. A step that matches a period of Y
  hides an effect (on Ishigami, x2's sin^2 at 6+ levels), so mu* is a screen, not a variance share.

The design space and SALib's designs (Param, saltelli_design, morris_design) live in
sensitivity.config.design, shared with the sweep; they are re-exported here.

Intervals are SALib's bootstrap over the design's base rows (Sobol') or elementary effects (Morris):
[est - conf, est + conf]. SALib draws them as if the base rows were independent; on its scrambled Sobol'
design the estimates are more precise than that, so the intervals cover conservatively, more so as N grows
(docs/experiments.md, "Sensitivity indices", has the coverage measured on Ishigami and Sobol's G-function).

Each estimator is an `Evaluator` (`base`) whose `Ranking` ranks by ST (Sobol', with S1 beside it and S2 as its
interactions) or mu* (Morris, with sigma and mu beside it); the bootstrap replicates behind `settled` resample the
base rows (Sobol', SALib's own replicates) or the trajectories (Morris).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sensitivity.analysis.rankings.base import Estimate, Evaluator, Ranking
from sensitivity.config.design import design_size, factors_of

RESAMPLES = 100  # SALib's default bootstrap resamples
CONF_LEVEL = 0.95
RANKING_RESAMPLES = 200  # resamples of the trajectories for a Morris ranking


class Design(NamedTuple):
    """A design's points and their values, as an evaluator of indices takes them: SALib's `problem`, the rows X
    in SALib's order (the design's own units) and the objective Y at each."""
    problem: dict
    X: np.ndarray
    Y: np.ndarray


def _estimate(value, conf) -> Estimate:
    return Estimate(float(value), float(value - conf), float(value + conf))


def _objective(Y, rows: int, what: str) -> np.ndarray:
    Y = np.asarray(Y, dtype=float).ravel()
    if Y.size != rows:
        raise ValueError(f"{what} has {rows} runs but {Y.size} objective values")
    if not np.isfinite(Y).all():
        raise ValueError(f"the objective has {int((~np.isfinite(Y)).sum())} values that are not finite "
                         "(give a diverged run its chance-level score)")
    if np.ptp(Y) == 0:
        raise ValueError("the objective is constant over the design: no variance to attribute")
    return Y


class SobolEvaluator(Evaluator):
    """Sobol' indices of a Saltelli design: the ranking by ST, S1 beside it, S2 as its interactions."""
    name, label = "sobol", "ST (with interactions)"
    measures = "the share of the objective's variance a parameter explains with all its interactions (ST)"

    def __init__(self, second_order: bool = True, num_resamples: int = RESAMPLES, conf_level: float = CONF_LEVEL):
        self.second_order, self.num_resamples, self.conf_level = second_order, num_resamples, conf_level

    def evaluate(self, sample: Design, params=None, *, seed: int = 0) -> Ranking:
        """S1, ST (and S2 where `second_order`) with SALib's bootstrap intervals, from the objective values Y of a
        Saltelli design's rows in their order (`sample.X` is not read: SALib's estimator knows the order)."""
        # lazy: SALib
        from SALib.analyze import sobol as sobol_analyze

        problem = sample.problem
        factors = factors_of(problem)
        per_base = design_size(len(factors), 1, self.second_order)
        Y = np.asarray(sample.Y, dtype=float).ravel()
        if Y.size % per_base:
            raise ValueError(f"{Y.size} objective values is not a Saltelli design over {len(factors)} factors "
                             f"(a multiple of {per_base}{' with' if self.second_order else ' without'} second order)")
        Y = _objective(Y, Y.size, "the design")
        S = sobol_analyze.analyze(problem, Y, calc_second_order=self.second_order, num_resamples=self.num_resamples,
                                  conf_level=self.conf_level, keep_resamples=True, seed=seed + 1)  # 0: no seed there
        interactions = {}
        if self.second_order:
            for j, a in enumerate(factors):
                for k in range(j + 1, len(factors)):
                    interactions[(a, factors[k])] = _estimate(S["S2"][j, k], S["S2_conf"][j, k])
        return Ranking(tuple(factors), tuple(_estimate(S["ST"][j], S["ST_conf"][j]) for j in range(len(factors))),
                       np.asarray(S["ST_conf_all"]), "ST",
                       {"S1": tuple(_estimate(S["S1"][j], S["S1_conf"][j]) for j in range(len(factors)))},
                       interactions, Y.size // per_base)


class MorrisEvaluator(Evaluator):
    """Morris' elementary effects of a Morris design: the ranking by mu*, sigma and mu beside it."""
    name, label = "morris", "mu* (Morris)"
    measures = "the mean absolute elementary effect of a parameter (mu*), a screen that ranks roughly as ST does"

    def __init__(self, levels: int = 4, num_resamples: int = RESAMPLES, conf_level: float = CONF_LEVEL,
                 ranking_resamples: int = RANKING_RESAMPLES):
        self.levels, self.num_resamples, self.conf_level = levels, num_resamples, conf_level
        self.ranking_resamples = ranking_resamples

    def evaluate(self, sample: Design, params=None, *, seed: int = 0) -> Ranking:
        """mu*, its interval and sigma per factor from a Morris design X and its objective values Y; and mu* over
        `ranking_resamples` resamples of whole trajectories (for `settled`)."""
        # lazy: SALib
        from SALib.analyze import morris as morris_analyze

        problem = sample.problem
        factors = factors_of(problem)
        X = np.asarray(sample.X, dtype=float)
        size = len(factors) + 1
        if X.ndim != 2 or len(X) % size or len(X) < 2 * size:
            raise ValueError(f"a Morris design over {len(factors)} factors has a multiple of {size} rows "
                             f"(at least 2 trajectories), got {len(X)}")
        Y = _objective(sample.Y, len(X), "the design")

        def analyze(x, y, n, s):
            return morris_analyze.analyze(problem, x, y, num_resamples=n, conf_level=self.conf_level,
                                          num_levels=self.levels, seed=s)

        S = analyze(X, Y, self.num_resamples, seed)
        trajectories = len(X) // size
        rng = np.random.default_rng(seed)
        replicates = np.empty((self.ranking_resamples, len(factors)))
        for b in range(self.ranking_resamples):
            rows = (rng.integers(trajectories, size=trajectories)[:, None] * size + np.arange(size)).ravel()
            replicates[b] = analyze(X[rows], Y[rows], 2, seed + 1 + b)["mu_star"]
        return Ranking(tuple(factors), tuple(_estimate(S["mu_star"][j], S["mu_star_conf"][j])
                                             for j in range(len(factors))), replicates, "mu*",
                       {"sigma": tuple(float(v) for v in S["sigma"]), "mu": tuple(float(v) for v in S["mu"])},
                       {}, trajectories)


def sobol_indices(problem: dict, Y, second_order: bool = True, num_resamples: int = RESAMPLES,
                  conf_level: float = CONF_LEVEL, seed: int = 0) -> Ranking:
    """`SobolEvaluator`'s ranking of a Saltelli design's objective values Y, in the design's order."""
    return SobolEvaluator(second_order, num_resamples, conf_level).evaluate(Design(problem, None, Y), seed=seed)


def morris_indices(problem: dict, X, Y, levels: int = 4, num_resamples: int = RESAMPLES,
                   conf_level: float = CONF_LEVEL, seed: int = 0,
                   ranking_resamples: int = RANKING_RESAMPLES) -> Ranking:
    """`MorrisEvaluator`'s ranking of a Morris design X and its objective values Y."""
    return MorrisEvaluator(levels, num_resamples, conf_level, ranking_resamples).evaluate(Design(problem, X, Y),
                                                                                        seed=seed)
