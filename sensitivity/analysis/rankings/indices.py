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

Settled (`settled`): the top factor of a ranking (ST on a Saltelli design, mu* on a Morris one) leads in at
least LEAD_SHARE of bootstrap resamples, resampling the base rows (Sobol', SALib's own replicates) or the
trajectories (Morris), and its interval lies above the second's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from sensitivity.config.design import (KINDS, Param, configuration_of, configurations_of, design_size,  # noqa: F401
                                       factors_of, largest_base_within, morris_design, param_of,
                                       params_of_distributions, problem_of, row_of, saltelli_design)
RESAMPLES = 100  # SALib's default bootstrap resamples
CONF_LEVEL = 0.95
LEAD_SHARE = 0.90  # a settled ranking's top factor leads in at least this share of resamples
RANKING_RESAMPLES = 200  # resamples of the trajectories for a Morris ranking


class Estimate(NamedTuple):
    """An index and its interval (SALib's bootstrap: estimate -/+ its conf)."""
    value: float
    low: float
    high: float


def _estimate(value, conf) -> Estimate:
    return Estimate(float(value), float(value - conf), float(value + conf))


class SobolIndices(NamedTuple):
    name: str
    first: Estimate  # S1: the share of the variance the factor explains alone
    total: Estimate  # ST: with all its interactions


class Ranking(NamedTuple):
    """Factors ranked by one index: their estimates and bootstrap replicates (resamples x factors)."""
    names: tuple
    estimates: tuple
    replicates: np.ndarray


@dataclass(frozen=True)
class SobolResult:
    parameters: tuple  # SobolIndices per factor, in the problem's order
    interactions: dict  # S2: {(a, b): Estimate} per pair of factors (empty without second order)
    n_base: int
    total_replicates: np.ndarray = field(repr=False)  # ST bootstrap replicates over base rows

    def ranking(self) -> Ranking:
        """The total-order ranking (issue 30: the ranking of a Saltelli design)."""
        return Ranking(tuple(p.name for p in self.parameters), tuple(p.total for p in self.parameters),
                       self.total_replicates)


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


def sobol_indices(problem: dict, Y, second_order: bool = True, num_resamples: int = RESAMPLES,
                  conf_level: float = CONF_LEVEL, seed: int = 0) -> SobolResult:
    """S1, ST (and S2 where `second_order`) with SALib's bootstrap intervals, from the objective values Y of
    a Saltelli design's rows in their order."""
    # lazy: SALib
    from SALib.analyze import sobol as sobol_analyze

    factors = factors_of(problem)
    per_base = design_size(len(factors), 1, second_order)
    Y = np.asarray(Y, dtype=float).ravel()
    if Y.size % per_base:
        raise ValueError(f"{Y.size} objective values is not a Saltelli design over {len(factors)} factors "
                         f"(a multiple of {per_base}{' with' if second_order else ' without'} second order)")
    Y = _objective(Y, Y.size, "the design")
    S = sobol_analyze.analyze(problem, Y, calc_second_order=second_order, num_resamples=num_resamples,
                              conf_level=conf_level, keep_resamples=True, seed=seed + 1)  # 0: no seed there
    parameters = tuple(SobolIndices(name, _estimate(S["S1"][j], S["S1_conf"][j]),
                                    _estimate(S["ST"][j], S["ST_conf"][j])) for j, name in enumerate(factors))
    interactions = {}
    if second_order:
        for j, a in enumerate(factors):
            for k in range(j + 1, len(factors)):
                interactions[(a, factors[k])] = _estimate(S["S2"][j, k], S["S2_conf"][j, k])
    return SobolResult(parameters, interactions, Y.size // per_base, np.asarray(S["ST_conf_all"]))


class MorrisIndices(NamedTuple):
    name: str
    mu_star: Estimate  # the mean absolute elementary effect, SALib's bootstrap interval
    sigma: float  # the spread of the elementary effects: nonlinearity or interactions
    mu: float  # the mean signed effect


@dataclass(frozen=True)
class MorrisResult:
    parameters: tuple  # MorrisIndices per factor
    trajectories: int
    mu_star_replicates: np.ndarray = field(repr=False)  # mu* over resampled trajectories

    def ranking(self) -> Ranking:
        """The mu* ranking (issue 30: the ranking of a Morris design)."""
        return Ranking(tuple(p.name for p in self.parameters), tuple(p.mu_star for p in self.parameters),
                       self.mu_star_replicates)


def morris_indices(problem: dict, X, Y, levels: int = 4, num_resamples: int = RESAMPLES,
                   conf_level: float = CONF_LEVEL, seed: int = 0,
                   ranking_resamples: int = RANKING_RESAMPLES) -> MorrisResult:
    """mu*, its interval and sigma per factor from a Morris design X and its objective values Y; and mu*
    over `ranking_resamples` resamples of whole trajectories (for `settled`)."""
    # lazy: SALib
    from SALib.analyze import morris as morris_analyze

    factors = factors_of(problem)
    X = np.asarray(X, dtype=float)
    size = len(factors) + 1
    if X.ndim != 2 or len(X) % size or len(X) < 2 * size:
        raise ValueError(f"a Morris design over {len(factors)} factors has a multiple of {size} rows "
                         f"(at least 2 trajectories), got {len(X)}")
    Y = _objective(Y, len(X), "the design")

    def analyze(x, y, n, s):
        return morris_analyze.analyze(problem, x, y, num_resamples=n, conf_level=conf_level,
                                      num_levels=levels, seed=s)

    S = analyze(X, Y, num_resamples, seed)
    trajectories = len(X) // size
    rng = np.random.default_rng(seed)
    replicates = np.empty((ranking_resamples, len(factors)))
    for b in range(ranking_resamples):
        rows = (rng.integers(trajectories, size=trajectories)[:, None] * size + np.arange(size)).ravel()
        replicates[b] = analyze(X[rows], Y[rows], 2, seed + 1 + b)["mu_star"]
    parameters = tuple(MorrisIndices(name, _estimate(S["mu_star"][j], S["mu_star_conf"][j]),
                                     float(S["sigma"][j]), float(S["mu"][j])) for j, name in enumerate(factors))
    return MorrisResult(parameters, trajectories, replicates)


class Verdict(NamedTuple):
    settled: bool
    top: str
    second: str | None
    lead: float  # the share of resamples in which `top` ranks first
    separated: bool  # top's interval lies above the second's
    why: str


def settled(ranking, lead_share: float = LEAD_SHARE) -> Verdict:
    """Whether a ranking (a Ranking, or a result with `ranking()`) is settled: its top factor leads in at
    least `lead_share` of the bootstrap resamples and its interval lies above the second's; `why` says."""
    if hasattr(ranking, "ranking"):
        ranking = ranking.ranking()
    names, estimates = list(ranking.names), list(ranking.estimates)
    order = sorted(range(len(names)), key=lambda j: -estimates[j].value)
    top = order[0]
    if len(names) == 1:
        return Verdict(True, names[top], None, 1.0, True, f"{names[top]} is the only factor")
    second = order[1]
    replicates = np.asarray(ranking.replicates, dtype=float)
    lead = float(np.mean(np.argmax(replicates, axis=1) == top)) if len(replicates) else 0.0
    separated = estimates[top].low > estimates[second].high
    ok = lead >= lead_share and separated
    a, b = names[top], names[second]
    if ok:
        why = f"{a} leads in {lead:.0%} of resamples, and its interval lies above {b}'s"
    else:
        reasons = ([f"{a} leads in only {lead:.0%} of resamples (needs {lead_share:.0%})"] if lead < lead_share
                   else []) + ([f"{a}'s interval overlaps {b}'s"] if not separated else [])
        why = "; ".join(reasons)
    return Verdict(ok, a, b, lead, separated, why)
