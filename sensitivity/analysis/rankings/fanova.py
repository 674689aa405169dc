"""fANOVA's first-order importances (Hutter, Hoos and Leyton-Brown 2014) as Optuna's `FanovaImportanceEvaluator`
computes them, read from each tree's leaves at once (issue 42: its bootstrap made cheaper, not dropped).

The same forest: scikit-learn's RandomForestRegressor with Optuna's settings (min_samples_split 2, min_samples_leaf
1, the trees, depth and seed given), fitted to the same encoding of the trials (Optuna's transform without log or
step: a number as it is, bounds [low, high]; a categorical one-hot, each column in [0, 1]) and their values. Then,
per tree, where Optuna walks the tree once per cell of each parameter's split points (its encoded columns), in
Python: the leaves' boxes (the search space cut by the splits above them) are found once, and every cell's marginal
prediction, of every parameter at once, is the average of the leaves whose box holds the cell, each weighted by its
volume in the other parameters' columns: a few array operations. A tree's importance of a parameter is that
marginal prediction's variance over the cells (weighted by their sizes) over the tree's own variance over its leaves;
the forest's is the mean over the trees with variance. The trials are encoded once and a bootstrap resample is a
choice of their rows (`Encoded`). Equal to Optuna's to rounding (`tests/analysis/test_fanova.py`); 0.4 s a fit of 16
trees of depth 8 in Optuna, a few milliseconds here (docs/performance.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from optuna.distributions import CategoricalDistribution


def encode(trials: list, distributions: dict) -> tuple:
    """(X, bounds, groups): the trials' parameters as Optuna's fANOVA encodes them, the columns' bounds, and each
    parameter's encoded columns (in the order of `distributions`)."""
    bounds, groups = [], []
    for d in distributions.values():
        start = len(bounds)
        if isinstance(d, CategoricalDistribution):
            bounds += [(0.0, 1.0)] * len(d.choices)
        else:
            bounds.append((float(d.low), float(d.high)))
        groups.append(np.arange(start, len(bounds)))
    X = np.zeros((len(trials), len(bounds)))
    for row, trial in enumerate(trials):
        for (name, d), columns in zip(distributions.items(), groups):
            value = trial.params[name]
            if isinstance(d, CategoricalDistribution):
                X[row, columns[0] + int(d.to_internal_repr(value))] = 1.0
            else:
                X[row, columns[0]] = float(value)
    return X, np.array(bounds, dtype=float), groups


def _leaves(tree, bounds: np.ndarray) -> tuple:
    """(values, low, high) of a fitted scikit-learn tree's leaves: each leaf's prediction and its box, found a
    level of the tree at a time (each child's box is its parent's, cut at the parent's split)."""
    left, right = tree.children_left, tree.children_right
    feature, threshold, value = tree.feature, tree.threshold, tree.value.reshape(tree.node_count, -1)[:, 0]
    low = np.empty((tree.node_count, len(bounds)))
    high = np.empty_like(low)
    low[0], high[0] = bounds[:, 0], bounds[:, 1]
    level = np.array([0])
    while level.size:
        parents = level[feature[level] >= 0]
        cut, at = feature[parents], threshold[parents]
        for children in (left[parents], right[parents]):
            low[children], high[children] = low[parents], high[parents]
        high[left[parents], cut] = at
        low[right[parents], cut] = at
        level = np.concatenate((left[parents], right[parents]))
    leaf = feature < 0
    return value[leaf], low[leaf], high[leaf]


def _tree_importances(tree, bounds: np.ndarray, groups: list) -> tuple:
    """(the tree's variance, its marginal variance per parameter), every parameter's cells at once."""
    values, low, high = _leaves(tree, bounds)
    sizes = high - low
    volume = np.prod(sizes, axis=1)
    mean = np.average(values, weights=volume)
    variance = float(np.average((values - mean) ** 2, weights=volume))
    left, right, column, intervals = _intervals(tree, bounds)
    # a parameter's cells: the grid of its columns' intervals, as (cell, column) pairs, a cell's pairs together
    grids = [np.stack(np.meshgrid(*[intervals[c] for c in columns], indexing="ij"), -1).reshape(-1, len(columns))
             for columns in groups]
    cells = np.array([len(grid) for grid in grids])
    pairs = np.concatenate([grid.ravel() for grid in grids])
    starts = np.concatenate(([0], np.cumsum(np.repeat([len(c) for c in groups], cells))[:-1]))
    mids, at = (left[pairs] + right[pairs]) / 2, column[pairs]
    holds = np.logical_and.reduceat((low[:, at] < mids) & (mids <= high[:, at]), starts, axis=1)  # leaves x cells
    width = np.multiply.reduceat(right[pairs] - left[pairs], starts)  # each cell's size in its own columns
    group = np.repeat(np.arange(len(groups)), cells)
    others = volume[:, None] / np.multiply.reduceat(sizes, [c[0] for c in groups], axis=1)  # leaves x parameters:
    weighted = holds * others[:, group]  # a leaf's volume in the columns of the other parameters
    weight = weighted.sum(axis=0)
    prediction = (values @ weighted) / weight  # each cell's marginal prediction
    weight = weight * width
    total = np.bincount(group, weights=weight, minlength=len(groups))
    centre = np.bincount(group, weights=weight * prediction, minlength=len(groups)) / total
    spread = np.bincount(group, weights=weight * (prediction - centre[group]) ** 2, minlength=len(groups)) / total
    return variance, np.maximum(spread, 0.0)


def _intervals(tree, bounds: np.ndarray) -> tuple:
    """(left, right, column, by column): the intervals the tree's splits cut each column's range into (their ends
    and column), and each column's intervals' positions in them."""
    inner = tree.feature >= 0
    every = np.arange(len(bounds))
    feature = np.concatenate((every, tree.feature[inner], every))
    at = np.concatenate((bounds[:, 0], tree.threshold[inner], bounds[:, 1]))
    order = np.lexsort((at, feature))
    feature, at = feature[order], at[order]
    distinct = np.concatenate(([True], (feature[1:] != feature[:-1]) | (at[1:] != at[:-1])))
    feature, at = feature[distinct], at[distinct]
    bounded = feature[1:] == feature[:-1]  # two neighbouring edges of one column bound an interval
    column = feature[:-1][bounded]
    first = np.searchsorted(column, every)
    by_column = [np.arange(a, b) for a, b in zip(first, [*first[1:], len(column)])]
    return at[:-1][bounded], at[1:][bounded], column, by_column


def importances(X: np.ndarray, y: np.ndarray, bounds: np.ndarray, groups: list, *, trees: int, depth: int,
                seed: int) -> np.ndarray:
    """Each parameter's fANOVA importance (the mean over the forest's trees with variance of its marginal variance
    over the tree's); RuntimeError where no tree has variance, as Optuna's."""
    # lazy: scikit-learn
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(n_estimators=trees, max_depth=depth, min_samples_split=2, min_samples_leaf=1,
                                   random_state=seed).fit(X, y)
    fractions = []
    for estimator in forest.estimators_:
        variance, marginal = _tree_importances(estimator.tree_, bounds, groups)
        if variance > 0.0:
            fractions.append(marginal / variance)
    if not fractions:
        raise RuntimeError("Encountered zero total variance in all trees.")
    return np.mean(fractions, axis=0)


@dataclass(frozen=True)
class Encoded:
    """Trials encoded once for fANOVA: the parameters asked for (`params`), those of them whose distribution
    varies (`varied`, sorted by name as Optuna sorts them), `encode`'s X, bounds and groups of those, and the
    objective values y; a resample is a choice of rows."""
    params: list
    varied: list
    X: np.ndarray
    y: np.ndarray
    bounds: np.ndarray
    groups: list

    @classmethod
    def of(cls, trials: list, params: list) -> "Encoded":
        """The complete trials `trials` over `params` (each in every trial)."""
        distributions = {name: trials[0].distributions[name] for name in sorted(params)}
        varied = {name: d for name, d in distributions.items() if not d.single()}
        X, bounds, groups = encode(trials, varied)
        return cls(list(params), list(varied), X, np.array([t.value for t in trials], dtype=float), bounds, groups)

    def importances(self, rows: np.ndarray, *, trees: int, depth: int, seed: int) -> dict:
        """{parameter: importance} of the trials at positions `rows`, unnormalised and ordered as Optuna orders
        them (descending); a parameter with one value scores 0."""
        scores = dict.fromkeys(self.params, 0.0)
        if self.varied and len(rows) > 1:
            found = importances(self.X[rows], self.y[rows], self.bounds, self.groups, trees=trees, depth=depth,
                                seed=seed)
            scores.update(zip(self.varied, found.tolist()))
        return dict(reversed(sorted(scores.items(), key=lambda item: item[1])))


def fanova_importances(trials: list, params: list, *, trees: int, depth: int, seed: int) -> dict:
    """{parameter: importance} of the complete trials `trials` over `params` (each in every trial), unnormalised
    and ordered as Optuna orders them (descending); a parameter with one value scores 0."""
    return Encoded.of(trials, params).importances(np.arange(len(trials)), trees=trees, depth=depth, seed=seed)
