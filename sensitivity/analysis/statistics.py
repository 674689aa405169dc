"""The statistics every claim shares, in one place: the level and the margin of every verdict (ALPHA, EFFECT,
`margin_of`), the names every claim reads (REGIME, the regime column), the quantiles of Student t and of the normal
(`t_quantile`, `z_quantile`, `t_half_width`, `bonferroni_z`), and the tests that need no interval.

`exact_permutation` is the exact permutation test over seeds (every split of the pooled values into groups of the
two sizes; with n and m seeds its p cannot go below 2 / C(n+m, n), `min_permutation_p`); `sign_flip` the exact
test of paired seeds (at least 2 / 2^n). `holm` adjusts a family of p-values. `tost` is the two one-sided tests of
equivalence within +-margin. `divergence` compares two divergence rates with Fisher's exact test. `seeds_needed`
is the seeds per group for a two-sample t test to detect a stated effect with 80% power (Student t's noncentral
distribution), given the SD's upper confidence bound (`sd_upper`) and the test set's share of the variance. The
intervals (`analysis.intervals`) take their quantiles from here. No other module of the package calls a quantile
function or defines ALPHA or REGIME (`tests/analysis/test_rooms.py` checks).
"""
from __future__ import annotations

import itertools
import math
from typing import Optional

import numpy as np

REGIME = "semantics"  # the trial table's column, and a comparison's field, that names the regime
ALPHA = 0.05  # the level of every test of a verdict (after Holm within a claim's family)
EFFECT = 0.02  # of accuracy, a dataset: the smallest difference that matters (`findings --effect`)
MIN_FOR_INTERVAL = 3  # seeds below which no parametric test or interval is made
MAX_SEEDS = 1000  # seeds_needed gives up beyond this


def t_quantile(q, df):
    """Student t's quantile (scipy.special's ufunc: the same numbers as scipy.stats.t.ppf, without its
    per-call overhead, which dominated an analysis of many comparisons)."""
    # lazy: scipy
    from scipy import special

    return special.stdtrit(df, q)


def z_quantile(q):
    """The standard normal's quantile (scipy.special's ufunc)."""
    # lazy: scipy
    from scipy import special

    return special.ndtri(q)


def t_half_width(df, se, confidence: float = 0.95) -> float:
    """The half-width of a two-sided Student t interval of `confidence` on `df` degrees of freedom."""
    return float(t_quantile((1 + confidence) / 2, df)) * se


def bonferroni_z(tests: int, alpha: float = ALPHA) -> float:
    """The normal quantile of a two-sided interval widened to a Bonferroni family of `tests`."""
    return float(z_quantile(1 - alpha / (2 * tests)))


def margin_of(claim: str, effect: float, detail=None) -> float:
    """A claim's margin of equivalence: `effect` a dataset (a home advantage of dataset transfer sums two
    differences, unless a crossover's `detail` says it is one side alone)."""
    one_side = isinstance(detail, dict) and detail.get("summed") in (False,)
    return 2 * effect if claim == "dataset transfer" and not one_side else effect


def sign_flip(means) -> float:
    """The exact two-sided sign-flip test of paired seeds' mean differences: P(|mean of +-d| >= |mean of d|)
    over every flip of the n seeds' signs (at least 2 / 2^n for untied values)."""
    means = np.asarray(means, float)
    flips = 1 - 2 * ((np.arange(2 ** len(means))[:, None] >> np.arange(len(means))[None, :]) & 1)
    null = np.abs((flips * means[None, :]).mean(axis=1))
    return float(np.mean(null >= abs(means.mean()) - 1e-12 * max(1.0, abs(means.mean()))))


def min_permutation_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p of the exact permutation test of n_a against n_b seeds (values untied):
    2 / C(n_a+n_b, n_a) for equal sizes, where each split has its mirror, else 1 / C(n_a+n_b, n_a)."""
    return min(1.0, (2 if n_a == n_b else 1) / math.comb(n_a + n_b, n_a))


def exact_permutation(groups, limit: int = 200_000, seed: int = 0) -> tuple:
    """(p, floor): the two-sided p of sum(sign * mean) over `groups` [(sign, values)] by permuting the seeds:
    each pair of groups of opposite sign on one test set is a block whose pooled values are split again into the
    two sizes;
    the statistic is the signed sum of the blocks' differences. Every split is enumerated while their number is
    at most `limit`, else `limit` random ones (seeded). `groups` is one block, or a list of blocks [[(s, v), (s, v)],
    ...]; floor: the smallest p any data could give these seeds' splits (the share of the null at its largest
    magnitude). (None, None) where a block is not two groups of opposite sign."""
    blocks = groups if groups and isinstance(groups[0], list) else [groups]
    nulls, observed = [], 0.0
    rng = np.random.default_rng(seed)
    total = 1
    for block in blocks:
        if len(block) != 2 or np.sign(block[0][0]) == np.sign(block[1][0]) or min(len(v) for _, v in block) == 0:
            return None, None
        (sa, a), (sb, b) = ((float(s), np.asarray(v, float)) for s, v in block)
        observed += sa * a.mean() + sb * b.mean()
        pooled, n = np.concatenate([a, b]), len(a)
        count = math.comb(len(pooled), n)
        total *= count
        if count <= limit:
            picks = np.array(list(itertools.combinations(range(len(pooled)), n)))
        else:
            picks = np.argsort(rng.random((limit, len(pooled))), axis=1)[:, :n]
        member = np.zeros((len(picks), len(pooled)), bool)
        np.put_along_axis(member, picks, True, axis=1)
        first = (member * pooled).sum(axis=1) / n
        second = (~member * pooled).sum(axis=1) / (len(pooled) - n)
        nulls.append(sa * first + sb * second)
    null = nulls[0]
    for more in nulls[1:]:
        if len(null) * len(more) <= limit:
            null = (null[:, None] + more[None, :]).ravel()
        else:
            null = null[rng.integers(0, len(null), limit)] + more[rng.integers(0, len(more), limit)]
    tolerance = 1e-12 * max(1.0, abs(observed))
    magnitude = np.abs(null)
    p = float(np.mean(magnitude >= abs(observed) - tolerance))
    return p, float(np.mean(magnitude >= magnitude.max() - 1e-12 * max(1.0, magnitude.max())))


def holm(p_values) -> list:
    """Holm's step-down adjustment of a family of p-values; None (no test) stays None."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None and p == p)
    adjusted, running = [None] * len(p_values), 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * p))
        adjusted[i] = running
    return adjusted


def seeds_needed(effect: float, sd: Optional[float], alpha: float = 0.05, power: float = 0.8,
                 test_var: float = 0.0) -> Optional[int]:
    """Seeds per group for a two-sided two-sample t test at `alpha` to detect a true difference of `effect`
    with `power`, the groups' standard deviation `sd` (pass `sd_upper`'s bound), `test_var` the test set's
    share of the estimate's variance; at least MIN_FOR_INTERVAL, None when `sd` is unknown or more than
    MAX_SEEDS would be needed (or no number of seeds would: the test set is too small)."""
    # lazy: scipy
    from scipy import special  # its ufuncs: scipy.stats's norm, t and nct, without seconds of importing it

    if sd is None or sd != sd or effect <= 0:
        return None
    z = z_quantile(1 - alpha / 2) + z_quantile(power)
    room = (effect / z) ** 2 - test_var  # the variance the seeds may take
    if room <= 0:
        return None
    if sd == 0:
        return MIN_FOR_INTERVAL
    normal = 2 * sd ** 2 / room
    if normal > MAX_SEEDS:
        return None
    for n in range(max(MIN_FOR_INTERVAL, int(normal) - 1), MAX_SEEDS + 1):  # t needs a little more than normal
        df = 2 * n - 2
        critical = t_quantile(1 - alpha / 2, df)
        shift = effect / math.sqrt(2 * sd ** 2 / n + test_var)
        lower_tail = float(np.nan_to_num(special.nctdtr(df, shift, -critical)))  # NaN far out: 0
        if 1.0 - float(special.nctdtr(df, shift, critical)) + lower_tail >= power:
            return n
    return None


def sd_upper(sd: Optional[float], df: float, confidence: float = 0.8) -> Optional[float]:
    """The one-sided upper confidence bound of a standard deviation estimated on `df` degrees of freedom
    (chi-square): the SD power advice should plan with, since 4 degrees of freedom leave it uncertain by 2x."""
    # lazy: scipy
    from scipy import special

    if sd is None or sd != sd or df is None or df < 1:
        return None
    return float(sd * math.sqrt(df / special.chdtri(df, confidence)))


def tost(estimate: float, se: Optional[float], margin: float, df: Optional[float] = None) -> Optional[float]:
    """The p-value of the two one-sided tests that the true value lies within +-margin (t on `df`, normal
    without); equivalence at alpha where it is below alpha."""
    # lazy: scipy
    from scipy import special

    if se is None or se != se or estimate != estimate:
        return None
    if se == 0:
        return 0.0 if abs(estimate) < margin else 1.0
    tail = (lambda x: special.stdtr(df, x)) if df is not None and math.isfinite(df) else special.ndtr
    return float(max(tail(-(estimate + margin) / se), tail((estimate - margin) / se)))


def divergence(diverged_a: int, n_a: int, diverged_b: int, n_b: int) -> Optional[float]:
    """Fisher's exact two-sided p of two divergence rates (diverged of runs); None without runs on a side."""
    if n_a == 0 or n_b == 0:
        return None
    total, runs = diverged_a + diverged_b, n_a + n_b

    def chance(k: int) -> float:
        return math.comb(n_a, k) * math.comb(n_b, total - k) / math.comb(runs, total)
    observed = chance(diverged_a)
    ks = range(max(0, total - n_b), min(total, n_a) + 1)
    return float(min(1.0, sum(chance(k) for k in ks if chance(k) <= observed * (1 + 1e-9))))
