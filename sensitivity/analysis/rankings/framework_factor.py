"""The framework as a factor of a designed study (issue 41): every framework ran every row of one design, so the
framework is one more factor, its levels weighted equally, and "frameworks differ in sensitivity" becomes a
question of its interactions.

Over the rows where every framework has a value (Y: frameworks x rows, each the mean over its seeds), with V the
variance of all of Y:
- S1(framework) = Var over frameworks of each framework's mean over rows, / V: a framework uniformly better;
- ST(framework) = the mean over rows of the variance across frameworks, / V: everything the framework moves;
- ST - S1: what the framework moves through the other factors, i.e. a difference in sensitivity. The seeds' noise
  enters ST: the variance across frameworks at one row holds (F - 1) / F of the noise of a row's mean,
  sigma^2 / k (k seeds a point; sigma^2 from the seeds of each point), which is subtracted as `noise` where the
  design has 2 or more seeds a point; with one, the noise cannot be told apart, and the record says so.
Intervals: the percentile bootstrap over the design's base rows (a Saltelli base row with its 2D + 1 derived
rows, a Morris trajectory), each resampled with all its frameworks, so that rows the frameworks share are never
taken as independent.
"""
from __future__ import annotations

import numpy as np

MARGIN = 0.05  # a share of variance below which the framework's interactions are not a difference worth naming
RESAMPLES = 1000


def _shares(Y: np.ndarray, spread) -> tuple:
    """(S1, ST, noise share) of frameworks x rows values Y, with the seeds' variance of each value (or None)."""
    total = Y.var()
    if not total > 0:
        return np.nan, np.nan, np.nan
    first = Y.mean(axis=1).var() / total
    whole = Y.var(axis=0).mean() / total
    frameworks = Y.shape[0]
    noise = ((frameworks - 1) / frameworks * np.nanmean(spread) / total) if spread is not None else np.nan
    return float(first), float(whole), float(noise)


def framework_factor(values: dict, design, resamples: int = RESAMPLES, seed: int = 0):
    """The framework's S1, ST, ST - S1 and, with 2 or more seeds a point, ST - S1 less the noise share, each
    [estimate, low, high] (None under two frameworks, or with no row every framework completed)."""
    frameworks = sorted(values)
    if len(frameworks) < 2:
        return None
    Y = np.vstack([values[f][0] for f in frameworks])
    seeds = int(design.seeds)
    spread = (np.vstack([values[f][3] for f in frameworks]) / seeds) if seeds > 1 else None
    block = max(1, design.points // max(1, design.size))
    groups = np.arange(Y.shape[1]) // block
    keep = np.isfinite(Y).all(axis=0)
    if not keep.any():
        return None
    Y, groups = Y[:, keep], groups[keep]
    spread = spread[:, keep] if spread is not None else None
    estimate = _shares(Y, spread)
    rng = np.random.default_rng(seed)
    ids = np.unique(groups)
    members = [np.flatnonzero(groups == g) for g in ids]
    draws = []
    for _ in range(resamples):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(ids), len(ids))])
        draws.append(_shares(Y[:, rows], spread[:, rows] if spread is not None else None))
    draws = np.array(draws)

    def triple(point: float, column) -> list:
        low, high = np.nanpercentile(column, [2.5, 97.5])
        return [round(point, 6), round(float(low), 6), round(float(high), 6)]

    first, whole, noise = estimate
    record = {"frameworks": frameworks, "rows": int(Y.shape[1]), "base_rows": len(ids), "seeds": seeds,
              "margin": MARGIN, "S1": triple(first, draws[:, 0]), "ST": triple(whole, draws[:, 1]),
              "interaction": triple(whole - first, draws[:, 1] - draws[:, 0]), "noise": None, "beyond_noise": None}
    if spread is not None and np.isfinite(noise):
        record["noise"] = round(noise, 6)
        record["beyond_noise"] = triple(whole - first - noise, draws[:, 1] - draws[:, 0] - draws[:, 2])
    return record
