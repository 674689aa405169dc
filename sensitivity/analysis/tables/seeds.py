"""Mean and confidence interval over seeds for each framework, regime and configuration.

A configuration (`config_id`) is run once per seed; its trials are grouped by framework, regime
(`semantics`) and config_id, so seeds of different regimes never share a mean. The interval is the one of
`intervals.mean_interval` (inside the metric's range): 3 or more seeds give a 95% interval, 2 give their
range (method "range", no interval), 1 gives the mean alone with `low`/`high` empty, never made up.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.intervals import CONFIDENCE, group_intervals, interval_text
from sensitivity.analysis.tables.parameter_values import configuration_label, numeric_sort_key
from sensitivity.analysis.table import (BY_FRAMEWORK, PARAM, REGIME, NotEnoughData, derived, grouped, parameter_names,
                                        regime_sorted, trained, trials_table)

METRICS = ("accuracy", "train_time_s")
NEEDS_SEEDS = "seed intervals need 2 or more seeds per configuration"
KEYS = (*BY_FRAMEWORK, "config_id")


def seed_intervals(table, metrics=METRICS, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per framework, regime and configuration: n_seeds, the configuration's parameters and label, and for
    each metric `<metric>_mean`, `_low`, `_high` (the range for n=2, empty for n=1), `_n` (seeds with a value)
    and `_method` (t, range, single). Those of EVERY_METRIC at CONFIDENCE are computed once per table (the
    summary, the frontier, isolation and the seeds section each ask), and given as a new frame each time."""
    table = trials_table(table)
    if confidence != CONFIDENCE or not set(metrics) <= set(EVERY_METRIC):
        return _seed_intervals(table, metrics, confidence)
    every = derived(table, _every_interval)
    of = {m: [f"{m}_{part}" for part in INTERVAL_PARTS] for m in EVERY_METRIC}
    last = ["configuration", "confidence"]
    keys = [c for c in every.columns if c not in last and all(c not in columns for columns in of.values())]
    return every[keys + [c for m in metrics for c in of[m]] + last]


EVERY_METRIC = ("val_accuracy", "accuracy", "train_time_s")
INTERVAL_PARTS = ("mean", "low", "high", "n", "method")  # the columns of `intervals.group_intervals`, after its prefix


def _every_interval(table: pd.DataFrame) -> pd.DataFrame:
    return _seed_intervals(table, EVERY_METRIC, CONFIDENCE)


def _seed_intervals(table: pd.DataFrame, metrics, confidence: float) -> pd.DataFrame:
    rows = trained(table)
    if rows.empty:
        raise NotEnoughData("seed intervals need complete trials (status ok or diverged)")
    names = parameter_names(rows, framework=False)
    aggregations = {PARAM + n: (PARAM + n, "first") for n in names}
    aggregations["dataset"] = ("dataset", "first")
    if "is_default" in rows:
        aggregations["is_default"] = ("is_default", "max")
    out = grouped(rows, keys=KEYS, **aggregations)
    for metric in metrics:
        out = out.merge(group_intervals(rows, KEYS, metric, confidence=confidence), on=list(KEYS), how="left")
    out["configuration"] = configuration_label(out, names)
    out["confidence"] = confidence
    return out


def framework_comparisons(intervals: pd.DataFrame, metric: str = "accuracy", top: int = 20) -> pd.DataFrame:
    """The rows to compare frameworks on: configurations run by two or more frameworks or regimes first (the
    same parameters but the framework or regime), then the rest, each ranked by its best mean; at most `top`
    labels, shown in the order of their parameters' values."""
    series = intervals["framework"] + "/" + intervals[REGIME]
    shared = series.groupby(intervals["configuration"]).nunique()
    best = intervals.groupby("configuration")[f"{metric}_mean"].max()
    ranking = pd.DataFrame({"shared": shared >= 2, "best": best}).sort_values(
        ["shared", "best"], ascending=False)
    chosen = _by_parameters(intervals, ranking.index[:top])
    rows = intervals[intervals["configuration"].isin(chosen)].copy()
    rows["position"] = rows["configuration"].map({c: i for i, c in enumerate(chosen)})
    return regime_sorted(rows, ["position", "framework", REGIME])


def best_configurations(table, keys=("dataset", *BY_FRAMEWORK)) -> pd.DataFrame:
    """Per group of `keys`: the configuration of highest mean validation accuracy over seeds (test accuracy
    where none was recorded), with `best_configuration` (its label), `best_config_id`, its test accuracy and
    train time as texts with their intervals (`best_accuracy_interval`, `best_time_interval`) and n seeds."""
    intervals = seed_intervals(table, metrics=EVERY_METRIC)
    chooser = "val_accuracy_mean" if intervals["val_accuracy_mean"].notna().any() else "accuracy_mean"
    ranked = intervals.dropna(subset=[chooser]).sort_values(chooser, ascending=False, kind="stable")
    best = ranked.drop_duplicates(list(keys))
    out = pd.DataFrame({**{k: best[k] for k in keys}, "best_configuration": best["configuration"],
                        "best_config_id": best["config_id"], "best_n_seeds": best["n_seeds"],
                        "best_accuracy_interval": [interval_text(m, lo, hi, n) for m, lo, hi, n in zip(
                            best["accuracy_mean"], best["accuracy_low"], best["accuracy_high"], best["accuracy_n"])],
                        "best_time_interval": [interval_text(m, lo, hi, n, 2) for m, lo, hi, n in zip(
                            best["train_time_s_mean"], best["train_time_s_low"], best["train_time_s_high"],
                            best["train_time_s_n"])]})
    out.attrs["chosen_on"] = chooser.replace("_mean", "")
    return regime_sorted(out, list(keys))


def _by_parameters(intervals: pd.DataFrame, chosen) -> list:
    """The chosen configurations in the order of their parameters' values (numbers as numbers: batch 32, 64,
    128), so that neighbours on the axis are neighbours in the space."""
    names = [c for c in intervals if c.startswith(PARAM)]
    first = intervals.drop_duplicates("configuration").set_index("configuration")
    return sorted(chosen, key=lambda c: tuple(numeric_sort_key(first.loc[c, n]) for n in names) + (c,))


def has_intervals(intervals: pd.DataFrame) -> bool:
    return bool((intervals["n_seeds"] >= 2).any())
