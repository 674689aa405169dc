"""PED-ANOVA's importances (Watanabe et al. 2023, with Optuna 5's conditional regimes) as Optuna's
`PedAnovaImportanceEvaluator` computes them with its defaults, for many resamples of one set of trials (issue 42:
its bootstrap made cheaper, not dropped).

Optuna, per call, walks every trial in Python: its parameters' regimes (the distribution a trial sampled a
parameter from, none where it did not), their grid cells, the top 10% by value. Here each trial's value, regime and
grid cell per parameter are found once (`Cells`), and a resample is a vector of trial positions: the top quantile,
the regimes' sizes and the cells' counts are array operations on it. The Parzen estimators on the grid are
Optuna's (Scott's bandwidth on the counts, a prior kernel of weight 1, a kernel truncated to the grid and
discretised to its cells), evaluated as the mixture's probability mass at each cell; equal to Optuna's to rounding
(`tests/analysis/test_ped_anova.py`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from optuna.distributions import CategoricalDistribution, IntDistribution

TARGET_QUANTILE = 0.1  # Optuna's defaults: the top 10% of the trials against all of them (region quantile 1)
N_STEPS = 50  # cells of a numerical parameter's grid
PRIOR_WEIGHT = 1.0
MIN_TRIALS_IN_REGIME = 2


class Regime(NamedTuple):
    """One distribution a parameter was sampled from: the trials that sampled it and their cells on its grid."""
    distribution: object
    member: np.ndarray  # bool per trial
    cell: np.ndarray  # int per trial (0 where not a member)
    size: int  # cells of the grid


class Cells(NamedTuple):
    """The trials as PED-ANOVA reads them: values, and per parameter its regimes in order of first appearance."""
    values: np.ndarray
    params: tuple
    regimes: dict  # {parameter: [Regime]}
    present: dict  # {parameter: bool per trial, whether it sampled the parameter}


def cells(trials: list, params) -> Cells:
    """Each complete trial's value and, per parameter of `params`, its regime and grid cell."""
    values = np.array([t.value for t in trials], dtype=float)
    regimes, present = {}, {}
    for name in params:
        found = [t.distributions.get(name) for t in trials]
        present[name] = np.array([d is not None for d in found], dtype=bool)
        regimes[name] = []
        for dist in dict.fromkeys(d for d in found if d is not None):  # each distinct one, in order of appearance
            member = np.array([d == dist for d in found], dtype=bool)
            cell, size = _grid_cells(dist, [t.params[name] for t, m in zip(trials, member) if m], member)
            regimes[name].append(Regime(dist, member, cell, size))
    return Cells(values, tuple(params), regimes, present)


def importances(data: Cells, index: np.ndarray) -> dict:
    """{parameter: importance} of the trials at positions `index` (a resample, repeats allowed), as Optuna's
    `get_param_importances` with PED-ANOVA's defaults gives them: normalised to sum to 1, in its order. ValueError
    where a parameter is in none of those trials, as Optuna's."""
    missing = [p for p in data.params if not data.present[p][index].any()]
    if missing:
        raise ValueError("Study must contain at least one completed trial for each specified parameter. "
                         f"Missing parameters: {missing}.")
    index = index[np.isfinite(data.values[index])]
    if len(index) <= 1:
        return {p: 1.0 / len(data.params) for p in data.params}
    loss = data.values[index]
    cutoff = int(math.ceil(TARGET_QUANTILE * loss.size)) - 1
    top = loss <= float(np.partition(loss, cutoff)[cutoff])
    n_top, n_all = int(top.sum()), len(index)
    scores = {}
    for name in data.params:
        score = 0.0
        for regime in data.regimes[name]:
            member = regime.member[index]
            n_regime = int(member.sum())
            if n_regime < MIN_TRIALS_IN_REGIME:
                continue
            in_top = member & top
            n_regime_top = int(in_top.sum())
            if regime.distribution.single() or not n_regime_top:
                continue
            cell = regime.cell[index]
            score += ((n_regime_top / n_top) ** 2 / (n_regime / n_all)
                      * _pearson_divergence(regime, cell[in_top], cell[member]))
        scores[name] = score * (n_top / n_all) ** 2
    ordered = dict(reversed(sorted(scores.items(), key=lambda item: item[1])))
    total = sum(ordered.values())
    if total == 0.0:
        return {p: 1.0 / len(ordered) for p in ordered}
    return {p: v / total for p, v in ordered.items()}


def _grid_cells(dist, values: list, member: np.ndarray) -> tuple:
    """(cell per trial, cells of the grid) of one regime: `values` of its member trials, in order."""
    cell = np.zeros(len(member), dtype=int)
    if isinstance(dist, CategoricalDistribution):
        cell[member] = [int(dist.to_internal_repr(v)) for v in values]
        return cell, len(dist.choices)
    n_steps = N_STEPS
    if isinstance(dist, IntDistribution) and dist.log:
        n_steps = min(int(np.ceil(np.log(dist.high - dist.low + 1) / np.log(2))) + 1, n_steps)
    elif dist.step is not None:
        n_steps = min(round((dist.high - dist.low) / dist.step) + 1, n_steps)
    low, high = (math.log(dist.low), math.log(dist.high)) if dist.log else (dist.low, dist.high)
    if not dist.single():  # one value: never scored
        step = (high - low) / (n_steps - 1)
        found = np.log(values) if dist.log else np.asarray(values)
        cell[member] = np.clip(np.ceil((found - low) / step - 0.5).astype(int), 0, n_steps - 1)
    return cell, n_steps


def _pearson_divergence(regime: Regime, top_cells: np.ndarray, all_cells: np.ndarray) -> float:
    """Optuna's Pearson divergence of the top trials' Parzen estimate on the grid from all trials'."""
    top = _parzen_pdf(regime, np.bincount(top_cells, minlength=regime.size)) + 1e-12
    local = _parzen_pdf(regime, np.bincount(all_cells, minlength=regime.size)) + 1e-12
    return float(local @ ((top / local - 1) ** 2))


def _parzen_pdf(regime: Regime, counts: np.ndarray) -> np.ndarray:
    """The probability of each cell under Optuna's Parzen estimator of the cells' `counts` (its
    `ScottParzenEstimator` on the grid, prior weight 1)."""
    observed = np.flatnonzero(counts)
    weights = counts[observed]
    mixture = np.append(weights, [PRIOR_WEIGHT])
    mixture = mixture / mixture.sum()
    if isinstance(regime.distribution, CategoricalDistribution):
        kernels = np.full((len(observed) + 1, regime.size), PRIOR_WEIGHT / (len(observed) + 1))
        kernels[np.arange(len(observed)), observed] += 1
        kernels /= kernels.sum(axis=1, keepdims=True)
        return mixture @ kernels
    low, high = 0, regime.size - 1
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    mean = (observed @ weights) / total
    sigma = np.sqrt(((observed - mean) ** 2 @ weights) / max(1, total - 1))
    q1 = np.searchsorted(cumulative, total // 4, side="left")
    q3 = np.searchsorted(cumulative, total * 3 // 4, side="right")
    iqr = observed[min(observed.size - 1, q3)] - observed[q1]
    sigma = max(1.059 * min(iqr / 1.34, sigma) * total ** -0.2, 0.5 / 1.64)
    mus = np.r_[observed, (low + high) / 2.0]
    sigmas = np.r_[np.full(len(observed), sigma), high - low + 1.0]
    grid = np.arange(regime.size)[:, None]
    mass = _gauss_mass((grid - 0.5 - mus) / sigmas, (grid + 0.5 - mus) / sigmas)  # cells x kernels
    norm = _gauss_mass((low - 0.5 - mus) / sigmas, (high + 0.5 - mus) / sigmas)  # each kernel on the grid
    return (mass / norm) @ mixture


def _gauss_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The standard normal's mass between a and b (a < b), from the tail nearer both (no cancellation)."""
    # lazy: scipy
    from scipy.special import ndtr

    upper = a > 0  # both in the upper tail: the mass from the lower tail of -b..-a
    return np.where(upper, ndtr(-a) - ndtr(-b), ndtr(b) - ndtr(a))
