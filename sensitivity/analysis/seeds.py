"""Mean and confidence interval over seeds for each framework, regime and configuration.

A configuration (`config_id`) is run once per seed; its trials are grouped by framework, regime
(`semantics`) and config_id, so seeds of different regimes never share a mean.
The interval is Student's t: mean +- t(0.975, n-1) * s / sqrt(n). With one seed there is no interval:
the mean is given with n=1 and `low`/`high` are empty, never made up.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sensitivity.analysis.table import (BY_FRAMEWORK, PARAM, REGIME, NotEnoughData, configuration_label, grouped,
                                        parameter_names, regime_sorted, trained, trials_table)

METRICS = ("accuracy", "train_time_s")
NEEDS_SEEDS = "seed intervals need 2 or more seeds per configuration"


def seed_intervals(table, metrics=METRICS, confidence: float = 0.95) -> pd.DataFrame:
    """One row per framework, regime and configuration: n_seeds, the configuration's parameters and label, and for
    each metric `<metric>_mean`, `_low`, `_high` (empty for n < 2) and `_n` (seeds with a value)."""
    from scipy import stats

    table = trials_table(table)
    rows = trained(table)
    if rows.empty:
        raise NotEnoughData("seed intervals need complete trials (status ok or diverged)")
    names = parameter_names(rows, framework=False)
    aggregations = {PARAM + n: (PARAM + n, "first") for n in names}
    for metric in metrics:
        aggregations.update({f"{metric}_mean": (metric, "mean"), f"{metric}_std": (metric, "std"),
                             f"{metric}_n": (metric, "count")})
    if "is_default" in rows:
        aggregations["is_default"] = ("is_default", "max")
    out = grouped(rows, keys=(*BY_FRAMEWORK, "config_id"), **aggregations)
    for metric in metrics:
        n = out[f"{metric}_n"].to_numpy(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(n >= 2, stats.t.ppf((1 + confidence) / 2, np.maximum(n - 1, 1)), np.nan)
            half = t * out[f"{metric}_std"].to_numpy(float) / np.sqrt(n)
        out[f"{metric}_low"] = out[f"{metric}_mean"] - half
        out[f"{metric}_high"] = out[f"{metric}_mean"] + half
    out["configuration"] = configuration_label(out, names)
    out["confidence"] = confidence
    return out


def framework_comparisons(intervals: pd.DataFrame, metric: str = "accuracy", top: int = 20) -> pd.DataFrame:
    """The rows to compare frameworks on: configurations run by two or more frameworks or regimes first (the
    same parameters but the framework or regime), then the rest, each ranked by its best mean; at most `top`
    labels."""
    series = intervals["framework"] + "/" + intervals[REGIME]
    shared = series.groupby(intervals["configuration"]).nunique()
    best = intervals.groupby("configuration")[f"{metric}_mean"].max()
    ranking = pd.DataFrame({"shared": shared >= 2, "best": best}).sort_values(
        ["shared", "best"], ascending=False)
    chosen = ranking.index[:top]
    rows = intervals[intervals["configuration"].isin(chosen)].copy()
    rows["position"] = rows["configuration"].map({c: i for i, c in enumerate(chosen)})
    return regime_sorted(rows, ["position", "framework", REGIME])


def has_intervals(intervals: pd.DataFrame) -> bool:
    return bool((intervals["n_seeds"] >= 2).any())
