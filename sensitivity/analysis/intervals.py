"""The one interval every analysis reports: a mean over seeds (or models) with its 95% interval, kept inside
the metric's range.

Method: Student's t on the values (mean +- t(0.975, n-1) * s / sqrt(n)), cut to the metric's range
(accuracy [0, 1], times and memory [0, inf)). Cutting never drops a true mean that lies in the range, so
the coverage of the t interval is kept. Below 3 values there is no interval: with 2 the range of the two
values is given instead (method "range"), with 1 the value alone; a t interval at n=2 is 12.7 standard
errors wide and says nothing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

MIN_FOR_INTERVAL = 3
BOUNDS = {"accuracy": (0.0, 1.0), "val_accuracy": (0.0, 1.0), "relative": (0.0, math.inf),
          "time": (0.0, math.inf), "difference": (-math.inf, math.inf)}


@dataclass(frozen=True)
class Interval:
    mean: float
    low: Optional[float]
    high: Optional[float]
    n: int
    method: str  # "t" (Student t, cut to the range), "range" (n=2: the two values), "single", "none"

    def text(self, digits: int = 3) -> str:
        if self.n == 0:
            return "-"
        value = f"{self.mean:.{digits}f}"
        if self.method == "t":
            return f"{value} [{self.low:.{digits}f}, {self.high:.{digits}f}] n={self.n}"
        if self.method == "range":
            return f"{value} (n=2: range {self.low:.{digits}f} to {self.high:.{digits}f}, no interval)"
        return f"{value} (n=1, no interval)"


def bounds_of(metric: str) -> tuple:
    """The range a metric's values (and so its mean) lie in."""
    if metric in BOUNDS:
        return BOUNDS[metric]
    if metric.endswith(("_s", "_mb", "_j", "throughput", "percent")):
        return BOUNDS["time"]
    return BOUNDS["difference"]


def mean_interval(values, metric: str = "accuracy", confidence: float = 0.95) -> Interval:
    """The mean of `values` (NaNs dropped) with its interval, in `metric`'s range (see the module)."""
    from scipy import stats

    values = np.asarray([v for v in np.asarray(values, float).ravel() if np.isfinite(v)])
    n = len(values)
    if n == 0:
        return Interval(math.nan, None, None, 0, "none")
    mean = float(values.mean())
    if n == 1:
        return Interval(mean, None, None, 1, "single")
    if n < MIN_FOR_INTERVAL:
        return Interval(mean, float(values.min()), float(values.max()), n, "range")
    low, high = bounds_of(metric)
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * values.std(ddof=1) / math.sqrt(n))
    return Interval(mean, max(low, mean - half), min(high, mean + half), n, "t")
