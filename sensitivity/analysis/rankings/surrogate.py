"""First-order indices of a model-based sampler's trials (TPE, GP, CMA-ES): a surrogate fitted to the trials and
analysed on a design drawn from the prior.

A model-based sampler crowds its trials where the objective is good, so an estimator that assumes independent draws
from the prior is biased on them, and importance weights that would undo the sampler's density need that density,
which Optuna does not record (estimated by a classifier of trials against prior draws, their effective sample size
on 2,000 TPE trials of Sobol's G-function was 1 to 10 of 2,000: useless). Here instead:
- the surrogate: scikit-learn's ExtraTreesRegressor (TREES trees) fitted to the configurations (a configuration's
  trials averaged; numeric parameters in prior units, categorical ones as their levels' indices), at most
  SURROGATE_MAX of them (seeded subsample);
- the design: DESIGN_POINTS points drawn independently from the prior (seeded), where the surrogate's predictions are
  analysed by the given-data estimator (`given.rbd_first_order`: RBD-FAST, epsilon squared for categoricals);
- the interval: the surrogate refitted on REFITS bootstrap resamples of the configurations, each analysed on the
  same design; the 2.5-97.5 percentiles of those, widened to hold the full fit's estimate.
The interval is the fit's sampling error only: where the trials leave a region of the space unvisited, the
surrogate's guess there is in no interval. `visited_share` reports how much of the design lies near a trial, and the
output prints it. TPE's random start-up trials alone (10) never give an interval: the surrogate needs at least
MIN_SURROGATE configurations. Measured coverage: docs/experiments.md, "Which estimator follows which sampling".
"""
from __future__ import annotations

import numpy as np

from sensitivity.analysis.rankings.base import Estimate, Evaluator, Ranking
from sensitivity.analysis.rankings.given import GivenData, check_enough, rbd_first_order

TREES = 100
REFITS = 20
DESIGN_POINTS = 2_048
SURROGATE_MAX = 2_000  # configurations a surrogate is fitted to (ExtraTrees: about 0.3 s a fit on 2,000)
MIN_SURROGATE = 50
NEAR = 0.5  # a design point lies near a trial within this share of the distance between random prior points


def prior_design(sample: GivenData, points: int, seed: int) -> np.ndarray:
    """`points` independent draws from the prior in the sample's units: uniform on [0, 1] for a numeric parameter,
    a level drawn uniformly for a categorical one (Optuna's random sampler draws its levels so)."""
    rng = np.random.default_rng(seed)
    columns = []
    for j, categorical in enumerate(sample.categorical):
        if categorical:
            levels = np.unique(sample.X[:, j])
            columns.append(rng.choice(levels, size=points))
        else:
            columns.append(rng.random(points))
    return np.column_stack(columns)


def visited_share(sample: GivenData, design: np.ndarray) -> float:
    """The share of the design's points whose nearest configuration lies within NEAR of the typical distance to
    the nearest of as many random prior points: 1 where the trials cover the space as random ones would."""
    # lazy: scikit-learn
    from sklearn.neighbors import NearestNeighbors

    reference = prior_design(sample, len(sample.Y), 1)
    typical = np.median(NearestNeighbors(n_neighbors=1).fit(reference).kneighbors(design[:512])[0])
    found = NearestNeighbors(n_neighbors=1).fit(sample.X).kneighbors(design)[0][:, 0]
    return float(np.mean(found <= typical * (1 + NEAR)))


class SurrogateEvaluator(Evaluator):
    """S1 of a surrogate fitted to the trials, analysed on a design drawn from the prior, with refits on bootstrap
    resamples of the configurations for its interval."""
    name, label = "surrogate", "S1 (surrogate on a prior design)"
    measures = ("the share of the objective's variance a parameter explains alone, in an ExtraTrees surrogate of "
                "the trials, read on points drawn from the prior")

    def __init__(self, refits: int = REFITS, points: int = DESIGN_POINTS, trees: int = TREES):
        self.refits, self.points, self.trees = refits, points, trees

    def evaluate(self, sample: GivenData, params=None, *, seed: int = 0) -> Ranking:
        """S1 per parameter of `sample` with its interval; `others["visited"]` the share of the design near a
        configuration."""
        # lazy: scikit-learn
        from sklearn.ensemble import ExtraTreesRegressor

        check_enough(sample, MIN_SURROGATE, "a surrogate")
        design = prior_design(sample, self.points, seed)
        cat = sample.categorical

        def fitted(X, Y, state):
            model = ExtraTreesRegressor(n_estimators=self.trees, random_state=state, n_jobs=1).fit(X, Y)
            return rbd_first_order(design, model.predict(design), cat)

        estimate = fitted(sample.X, sample.Y, seed)
        rng = np.random.default_rng(seed)
        n = len(sample.Y)
        replicates = np.array([fitted(sample.X[rows], sample.Y[rows], seed + 1 + b)
                               for b, rows in enumerate(rng.integers(n, size=(self.refits, n)))])
        low, high = np.percentile(replicates, [2.5, 97.5], axis=0)
        estimates = tuple(Estimate(float(e), float(min(lo, e)), float(max(hi, e)))
                          for e, lo, hi in zip(estimate, low, high))
        return Ranking(sample.names, estimates, replicates, "S1", {"visited": visited_share(sample, design)},
                       size=n)
