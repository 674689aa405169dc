"""The one interval helper every analysis uses: a mean over seeds (or models) with its 95% interval inside the
metric's range, the difference (or ratio) of two such groups with its interval and test, contrasts on shared
test sets, and the pooled summary of a claim's comparisons. The tests that need no interval (exact permutation,
Holm, TOST, Fisher's) and the seeds a comparison would need are `analysis.statistics`'.

Means (`mean_interval`, and `group_intervals` for many groups at once):
- Student t on the values: mean +- t(0.975, n-1) * s / sqrt(n), cut to the metric's range (accuracy
  [0, 1]; times, memory and ratios [0, inf)). Cutting never drops a true mean that lies in the range.
- For a metric in [0, 1] (accuracy), the interval is the hull of that t interval and the t interval of the
  values' logits mapped back (values within LOGIT_EPS of 0 or 1 are taken at LOGIT_EPS from it, about the
  resolution of a thousand test samples). Seeds near 1 pile up against the bound and skew the values; the t
  interval alone then covers 93-94% (3 to 10 seeds, Beta-distributed seeds with binomial test noise), the
  logit one alone drifts to the median and falls to 92% at 10 seeds, their hull covers 94.6-95.7% in every
  setting tried (accuracy 0.12 to 0.995, s 0.002 to 0.3, 3 to 10 seeds; tests/analysis/test_findings.py
  measures it again across 200 synthetic studies).
- Below MIN_FOR_INTERVAL (3) values there is no interval: with 2 the range of the two values is given
  (method "range", shown as "n=2: range, no interval"); a t interval at n=2 is 12.7 standard errors wide.
  With 1 the value alone ("single").

The unit of replication is the seed. Every test's degrees of freedom come from the seeds alone (at most
n_a + n_b - 2); the test set's sampling error may widen an interval, never add degrees of freedom.

Differences (`difference`): Welch's t interval and two-sided test of mean(a) - mean(b) on the raw values, with
3 or more values in each group and spread in each; otherwise no parametric test: the exact permutation test
over the seeds (`exact_permutation`: every split of the pooled values into groups of the two sizes; with n
and m seeds its p cannot go below 2 / C(n+m, n), 0.0079 at 5 and 5) and no interval. `ratio` does the same on the logs
of positive values (times) and maps back: a ratio and its interval.

Contrasts on shared test sets (`contrast`): a signed sum of configurations' mean accuracies (a difference; a
crossover's home advantage), each configuration an `Arm` of per-seed accuracies and, where the trials recorded
it, per-sample correctness. Its variance is the seeds' (each arm's variance over seeds / its seeds) plus, for
each test set, the test set's sampling error: the variance over its samples of the signed per-sample mean
correctness, less the part the seeds already count (method of moments), over its size. The interval is
Student t on the seeds' Welch-Satterthwaite degrees of freedom, at most the sum over arms of seeds - 1 (n_a +
n_b - 2 for two arms): the test set's error widens it and adds no degree of freedom. An arm of fewer than 3
seeds or of no spread gets the exact permutation test over seeds within each test set instead. Without
correctness the test set's error is left out
(method "welch"), as for any study but a transfer study.

Paired differences (`paired`): two configurations run on the same seeds, the mean over seeds of their per-seed
differences with Student t on n - 1 degrees of freedom; under 3 seeds, or without spread, the exact sign-flip
test over the seeds (its p cannot go below 2 / 2^n) and no interval.

`summary` pools a claim's comparisons: DerSimonian-Laird's random-effects mean (the between-comparison variance
widens it where comparisons disagree), normal interval; one comparison is its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from sensitivity.analysis.statistics import MIN_FOR_INTERVAL, exact_permutation, sign_flip, t_quantile, z_quantile

LOGIT_EPS = 1e-3
CONFIDENCE = 0.95
BOUNDS = {"accuracy": (0.0, 1.0), "val_accuracy": (0.0, 1.0), "relative": (0.0, math.inf),
          "time": (0.0, math.inf), "difference": (-math.inf, math.inf)}


@dataclass(frozen=True)
class Interval:
    mean: float
    low: Optional[float]
    high: Optional[float]
    n: int
    method: str  # "t" (with the logit hull for [0, 1] metrics), "range" (n=2), "single" (n=1), "none" (n=0)

    def text(self, digits: int = 3) -> str:
        return interval_text(self.mean, self.low, self.high, self.n, digits)

    def covers(self, value: float) -> bool:
        return self.low is not None and self.low <= value <= self.high


def interval_text(mean, low, high, n, digits: int = 3) -> str:
    """"0.912 [0.897, 0.925] n=3", "0.912 (n=2: range 0.90 to 0.92, no interval)", "0.912 (n=1, no interval)"."""
    if not n or n != n or mean is None or mean != mean:
        return "-"
    value = f"{mean:.{digits}f}"
    if n >= MIN_FOR_INTERVAL and low is not None and low == low:
        return f"{value} [{low:.{digits}f}, {high:.{digits}f}] n={int(n)}"
    if n == 2 and low is not None and low == low:
        return f"{value} (n=2: range {low:.{digits}f} to {high:.{digits}f}, no interval)"
    return f"{value} (n={int(n)}, no interval)"


def bounds_of(metric: str) -> tuple:
    """The range a metric's values (and so its mean) lie in."""
    if metric in BOUNDS:
        return BOUNDS[metric]
    if metric.endswith("accuracy"):
        return BOUNDS["accuracy"]
    if metric.endswith(("_s", "_mb", "_j", "throughput", "percent")):
        return BOUNDS["time"]
    return BOUNDS["difference"]


def _logit(values):
    p = np.clip(np.asarray(values, float), LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(p / (1 - p))


def _bounds(mean, sd, n, *, logit_mean, logit_sd, minimum, maximum, metric: str, confidence: float):
    """Vectorised: (low, high, method) from each group's statistics, as the module describes."""
    mean, sd, n = (np.asarray(x, float) for x in (mean, sd, n))
    low_bound, high_bound = bounds_of(metric)
    enough = n >= MIN_FOR_INTERVAL
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(enough, t_quantile((1 + confidence) / 2, np.maximum(n - 1, 1)), np.nan)
        half = t * np.nan_to_num(sd) / np.sqrt(n)
        low, high = mean - half, mean + half
        if (low_bound, high_bound) == (0.0, 1.0):
            logit_half = t * np.nan_to_num(np.asarray(logit_sd, float)) / np.sqrt(n)
            centre = np.asarray(logit_mean, float)
            low = np.minimum(low, 1 / (1 + np.exp(-(centre - logit_half))))
            high = np.maximum(high, 1 / (1 + np.exp(-(centre + logit_half))))
    low, high = np.clip(low, low_bound, high_bound), np.clip(high, low_bound, high_bound)
    pair = n == 2
    low = np.where(enough, low, np.where(pair, np.asarray(minimum, float), np.nan))
    high = np.where(enough, high, np.where(pair, np.asarray(maximum, float), np.nan))
    method = np.where(enough, "t", np.where(pair, "range", np.where(n == 1, "single", "none")))
    return low, high, method


def _finite(values) -> np.ndarray:
    values = np.asarray(values, float).ravel()
    return values[np.isfinite(values)]


def mean_interval(values, metric: str = "accuracy", confidence: float = CONFIDENCE) -> Interval:
    """The mean of `values` (NaNs dropped) with its interval, in `metric`'s range (see the module)."""
    values = _finite(values)
    n = len(values)
    if n == 0:
        return Interval(math.nan, None, None, 0, "none")
    sd = float(values.std(ddof=1)) if n > 1 else math.nan
    logits = _logit(values)
    low, high, method = _bounds([values.mean()], [sd], [n], logit_mean=[logits.mean()],
                                logit_sd=[logits.std(ddof=1) if n > 1 else math.nan], minimum=[values.min()],
                                maximum=[values.max()], metric=metric, confidence=confidence)
    as_float = (lambda x: None if x != x else float(x))
    return Interval(float(values.mean()), as_float(low[0]), as_float(high[0]), n, str(method[0]))


def group_intervals(rows: pd.DataFrame, keys, column: str, metric: Optional[str] = None, prefix: Optional[str] = None,
                    confidence: float = CONFIDENCE) -> pd.DataFrame:
    """`mean_interval` of `column` for each group of `keys` at once: one row per group with `<prefix>_mean`,
    `_low`, `_high`, `_n` and `_method` (prefix: the column's name; metric: the column's name)."""
    prefix, metric = prefix or column, metric or column
    values = pd.to_numeric(rows[column], errors="coerce")
    data = pd.DataFrame({k: rows[k] for k in keys}).assign(v=values.where(np.isfinite(values)))
    data["logit"] = np.where(data["v"].notna(), _logit(data["v"].fillna(0.5)), np.nan)
    stats = data.groupby(list(keys), dropna=False, sort=False).agg(
        mean=("v", "mean"), sd=("v", "std"), n=("v", "count"), lmean=("logit", "mean"), lsd=("logit", "std"),
        minimum=("v", "min"), maximum=("v", "max"))
    low, high, method = _bounds(stats["mean"], stats["sd"], stats["n"], logit_mean=stats["lmean"],
                                logit_sd=stats["lsd"], minimum=stats["minimum"], maximum=stats["maximum"],
                                metric=metric, confidence=confidence)
    out = pd.DataFrame({f"{prefix}_mean": stats["mean"].to_numpy(), f"{prefix}_low": low, f"{prefix}_high": high,
                        f"{prefix}_n": stats["n"].to_numpy().astype(int),
                        f"{prefix}_method": np.where(stats["n"].to_numpy() == 0, "none", method)},
                       index=stats.index)
    return out.reset_index()


@dataclass(frozen=True)
class Difference:
    estimate: float  # mean(a) - mean(b); for `ratio`, mean(log a) - mean(log b) mapped back: a ratio
    low: Optional[float]
    high: Optional[float]
    n_a: int
    n_b: int
    p: Optional[float]  # Welch's two-sided p; None without a test
    sd: Optional[float]  # the groups' pooled standard deviation (on the log scale for a ratio), for power
    method: str  # "welch", "welch-log" (a ratio), "welch+test-set" (`contrast`) or "too few"
    se: Optional[float] = None  # the estimate's standard error
    df: Optional[float] = None  # its degrees of freedom
    test_var: float = 0.0  # the test sets' share of se**2, which more seeds do not reduce
    test: str = "none"  # the test's name: "welch t", "exact permutation" or "none"
    p_floor: Optional[float] = None  # an exact test's smallest attainable p with these seeds (None: t, or no test)
    df_max: Optional[float] = None  # the seeds' degrees of freedom, which bound `df`: sum over arms of seeds - 1

    @property
    def tested(self) -> bool:
        return self.p is not None

    def covers(self, value: float) -> bool:
        return self.low is not None and self.low <= value <= self.high


def difference(a, b, confidence: float = CONFIDENCE) -> Difference:
    """mean(a) - mean(b) with Welch's interval and two-sided test (see the module)."""
    return _welch(_finite(a), _finite(b), confidence, "welch")


def ratio(a, b, confidence: float = CONFIDENCE) -> Difference:
    """The ratio of the geometric means of positive `a` and `b`, with Welch's interval on the logs."""
    a, b = _finite(a), _finite(b)
    out = _welch(np.log(a[a > 0]), np.log(b[b > 0]), confidence, "welch-log")
    exp = (lambda x: None if x is None else float(math.exp(x)))
    return Difference(exp(out.estimate), exp(out.low), exp(out.high), out.n_a, out.n_b, out.p, out.sd, out.method,
                      test=out.test, df=out.df, p_floor=out.p_floor)


def paired(a, b, confidence: float = CONFIDENCE) -> Difference:
    """mean(a - b) of values paired by position (the same seeds), with Student t's interval and two-sided test
    on n - 1 degrees of freedom (see the module); pairs with a value missing on either side are left out."""
    # lazy: scipy
    from scipy import special

    a, b = np.asarray(a, float), np.asarray(b, float)
    keep = np.isfinite(a) & np.isfinite(b)
    d = a[keep] - b[keep]
    n = len(d)
    if n == 0:
        return Difference(math.nan, None, None, 0, 0, None, None, "too few")
    estimate = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else None
    if n < MIN_FOR_INTERVAL or not sd:
        return Difference(estimate, None, None, n, n, sign_flip(d), sd, "exact", test="exact sign-flip",
                          p_floor=2 / 2 ** n)
    se = sd / math.sqrt(n)
    df = float(n - 1)
    half = float(t_quantile((1 + confidence) / 2, df)) * se
    p = float(2 * special.stdtr(df, -abs(estimate) / se))
    return Difference(estimate, estimate - half, estimate + half, n, n, p, sd, "paired t", se, df, test="paired t",
                      df_max=df)


def _welch(a: np.ndarray, b: np.ndarray, confidence: float, method: str) -> Difference:
    # lazy: scipy
    from scipy import special

    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        return Difference(math.nan, None, None, n_a, n_b, None, None, "too few")
    estimate = float(a.mean() - b.mean())
    pooled = _pooled_sd(a, b)
    va = a.var(ddof=1) / n_a if n_a > 1 else 0.0
    vb = b.var(ddof=1) / n_b if n_b > 1 else 0.0
    if min(n_a, n_b) < MIN_FOR_INTERVAL or va == 0 or vb == 0:  # no parametric test: the seeds' exact one
        p, floor = exact_permutation([(1.0, a), (-1.0, b)]) if n_a + n_b > 2 else (None, None)
        return Difference(estimate, None, None, n_a, n_b, p, pooled, "exact" if p is not None else "too few",
                          test="exact permutation" if p is not None else "none", p_floor=floor)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1))
    half = float(t_quantile((1 + confidence) / 2, df)) * se
    p = float(2 * special.stdtr(df, -abs(estimate) / se))
    return Difference(estimate, estimate - half, estimate + half, n_a, n_b, p, pooled, method, se, df,
                      test="welch t", df_max=float(n_a + n_b - 2))


def _pooled_sd(a: np.ndarray, b: np.ndarray) -> Optional[float]:
    dof = max(len(a) - 1, 0) + max(len(b) - 1, 0)
    if dof == 0:
        return None
    squares = (a.var(ddof=1) * (len(a) - 1) if len(a) > 1 else 0.0) + (b.var(ddof=1) * (len(b) - 1)
                                                                         if len(b) > 1 else 0.0)
    return float(math.sqrt(squares / dof))


@dataclass(frozen=True)
class Arm:
    """One configuration's converged runs on one test set: per-seed accuracy, and where the trials recorded it,
    per-sample correctness (seeds x samples); arms of the same `test_set` were tested on the same samples."""
    accuracy: np.ndarray
    correct: Optional[np.ndarray]
    test_set: str


def contrast(terms, confidence: float = CONFIDENCE) -> Difference:
    """sum(sign * mean accuracy of the arm) over `terms` [(sign, Arm)], with the test sets' sampling error
    where every arm on a test set recorded correctness (see the module); n_a, n_b: the fewest seeds of the
    positive and the negative arms."""
    # lazy: scipy
    from scipy import special

    terms = [(float(sign), arm) for sign, arm in terms]
    counts = [len(arm.accuracy) for _, arm in terms]
    n_a = min([n for (sign, _), n in zip(terms, counts) if sign > 0], default=0)
    n_b = min([n for (sign, _), n in zip(terms, counts) if sign < 0], default=0)
    if min(counts, default=0) == 0:
        return Difference(math.nan, None, None, n_a, n_b, None, None, "too few")
    estimate = float(sum(sign * arm.accuracy.mean() for sign, arm in terms))
    squares = sum((len(arm.accuracy) - 1) * arm.accuracy.var(ddof=1) for _, arm in terms if len(arm.accuracy) > 1)
    dof = sum(n - 1 for n in counts)
    pooled = float(math.sqrt(squares / dof)) if dof else None
    spread = [len(arm.accuracy) > 1 and arm.accuracy.var(ddof=1) > 0 for _, arm in terms]
    if min(counts) < MIN_FOR_INTERVAL or not all(spread):  # no parametric test: the seeds' exact one
        p, floor = exact_permutation(_blocks(terms)) if sum(counts) > len(counts) else (None, None)
        return Difference(estimate, None, None, n_a, n_b, p, pooled, "exact" if p is not None else "too few",
                          test="exact permutation" if p is not None else "none", p_floor=floor)
    parts = [(sign ** 2 * arm.accuracy.var(ddof=1) / len(arm.accuracy), len(arm.accuracy) - 1) for sign, arm in terms]
    # the seeds' Welch-Satterthwaite degrees of freedom: the test set's error widens the interval below, and adds
    # no degree of freedom
    seeds_var = sum(v for v, _ in parts)
    cap = float(sum(n - 1 for n in counts))  # the seeds' own: n_a + n_b - 2 for two arms
    df = min(float(seeds_var ** 2 / sum(v ** 2 / d for v, d in parts)), cap)
    test_var, method = 0.0, "welch+test-set"
    for key in dict.fromkeys(arm.test_set for _, arm in terms):
        part = _test_set_variance([(sign, arm) for sign, arm in terms if arm.test_set == key])
        if part is None:
            method = "welch"
            continue
        test_var += part[0]
    se = math.sqrt(seeds_var + test_var)
    half = float(t_quantile((1 + confidence) / 2, df)) * se
    p = float(2 * special.stdtr(df, -abs(estimate) / se))
    return Difference(estimate, estimate - half, estimate + half, n_a, n_b, p, pooled, method, se, df, test_var,
                      test="welch t", df_max=cap)


def _blocks(terms) -> list:
    """The contrast's arms as permutation blocks: per test set, its arms as (sign, accuracies)."""
    blocks: dict = {}
    for sign, arm in terms:
        blocks.setdefault(arm.test_set, []).append((sign, arm.accuracy))
    return list(blocks.values())


def _test_set_variance(terms) -> Optional[tuple]:
    """(variance the test set's samples add to the contrast, its degrees of freedom), or None where an arm on it
    has no correctness or the arms disagree on its size."""
    matrices = [arm.correct for _, arm in terms]
    if any(m is None for m in matrices) or len({m.shape[1] for m in matrices}) != 1:
        return None
    size = matrices[0].shape[1]
    per_sample = sum(sign * m.mean(axis=0) for (sign, _), m in zip(terms, matrices))
    # the runs' own spread in each sample's mean, which the seeds' term already counts
    within = sum(sign ** 2 * _noise_variance(m.astype(float)) / len(m) for (sign, _), m in zip(terms, matrices)
                 if len(m) > 1)
    return max(0.0, float(per_sample.var(ddof=1)) - within) / size, size - 1


def _noise_variance(matrix: np.ndarray) -> float:
    """The variance of runs x samples values left once each run's mean and each sample's mean are taken out
    (two-way residuals): the noise in a sample's mean over runs, without what a whole run shares."""
    runs, samples = matrix.shape
    if runs < 2 or samples < 2:
        return 0.0
    residual = matrix - matrix.mean(axis=1, keepdims=True) - matrix.mean(axis=0, keepdims=True) + matrix.mean()
    return float((residual ** 2).sum() / ((runs - 1) * (samples - 1)))


@dataclass(frozen=True)
class Summary:
    """A claim's comparisons pooled (`summary`)."""
    estimate: float
    low: Optional[float]
    high: Optional[float]
    se: Optional[float]
    p: Optional[float]
    k: int  # comparisons pooled
    tau: float  # the between-comparison standard deviation (DerSimonian-Laird)


def summary(diffs, confidence: float = CONFIDENCE) -> Summary:
    """The random-effects mean of the comparisons with a standard error (see the module); one comparison is
    its own (its t interval)."""
    # lazy: scipy
    from scipy import special

    tested = [d for d in diffs if d.se is not None and d.estimate == d.estimate]
    if not tested:
        return Summary(math.nan, None, None, None, None, 0, math.nan)
    if len(tested) == 1:
        d = tested[0]
        return Summary(d.estimate, d.low, d.high, d.se, d.p, 1, 0.0)
    y = np.array([d.estimate for d in tested])
    v = np.maximum(np.array([d.se for d in tested]) ** 2, 1e-12)
    w = 1 / v
    fixed = float((w * y).sum() / w.sum())
    q = float((w * (y - fixed) ** 2).sum())
    tau2 = max(0.0, (q - (len(y) - 1)) / float(w.sum() - (w ** 2).sum() / w.sum()))
    w = 1 / (v + tau2)
    estimate, se = float((w * y).sum() / w.sum()), float(math.sqrt(1 / w.sum()))
    half = float(z_quantile((1 + confidence) / 2)) * se
    p = float(2 * special.ndtr(-abs(estimate) / se)) if se > 0 else (0.0 if estimate else 1.0)
    return Summary(estimate, estimate - half, estimate + half, se, p, len(y), math.sqrt(tau2))


