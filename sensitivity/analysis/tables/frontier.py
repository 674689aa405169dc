"""The runtime-accuracy Pareto frontier: maximise `accuracy`, minimise `train_time_s`, read from the
trials' results whatever the study's objectives were, overall and per framework, with its hypervolume.
Each regime (`semantics`) has its own frontiers: "overall" is over the frameworks of one regime, and a
trial of one regime never dominates a trial of the other.

Only trials with status ok can be on a frontier. Diverged trials are shown and counted but never on it
(a fast run at chance level is not a trade-off anyone wants); pruned and failed trials are counted only.

Hypervolume: the area, in (accuracy, train time) space, that the frontier dominates up to the reference
point (accuracy 0, 1.1 x the slowest ok trial's train time). The reference point is the same for every
framework and regime, so their hypervolumes compare; `hypervolume_fraction` divides by the reference box
(1 x reference time), so 1.0 would be perfect accuracy in no time.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.tables.seeds import best_configurations
from sensitivity.analysis.table import (REGIME, NotEnoughData, defaults_of, derived, grouped, regime_position, trained,
                                        trials_table)

REFERENCE_TIME_MARGIN = 1.1
ALL = "all"


class Frontier(NamedTuple):
    """Fields:
    - points: trained trials: number, framework, semantics, accuracy, train_time_s, outcome, ...
    - summary: one row per regime and scope ("all", then each framework): counts, hypervolume
    - reference_point: (accuracy, train_time_s)
    """
    points: pd.DataFrame
    summary: pd.DataFrame
    reference_point: tuple


def pareto_mask(accuracy: np.ndarray, train_time: np.ndarray) -> np.ndarray:
    """Which points no other point beats on both accuracy (higher) and train time (lower); ties all kept.
    A sweep by train time: a point is beaten by a faster one at least as accurate, or an equally fast one
    more accurate."""
    accuracy, train_time = np.asarray(accuracy, float), np.asarray(train_time, float)
    if len(accuracy) == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((-accuracy, train_time))  # by time, then the most accurate first
    acc, seconds = accuracy[order], train_time[order]
    group_start = np.r_[True, seconds[1:] != seconds[:-1]]  # the first (most accurate) of each train time
    first = np.maximum.accumulate(np.where(group_start, np.arange(len(seconds)), 0))
    best_so_far = np.maximum.accumulate(acc)
    best_faster = np.where(first > 0, best_so_far[np.maximum(first - 1, 0)], -np.inf)  # over strictly faster
    on_front = (best_faster < acc) & (acc[first] <= acc)
    mask = np.empty(len(acc), dtype=bool)
    mask[order] = on_front
    return mask


def hypervolume(accuracy: np.ndarray, train_time: np.ndarray, reference_point: tuple) -> float:
    """The 2-D hypervolume (accuracy x seconds) dominated by the points up to `reference_point`: the area of
    the union of the boxes from each point to the reference, summed in strips between successive train times."""
    ref_accuracy, ref_time = reference_point
    accuracy, train_time = np.asarray(accuracy, float), np.asarray(train_time, float)
    inside = (accuracy >= ref_accuracy) & (train_time <= ref_time)
    accuracy, train_time = accuracy[inside], train_time[inside]
    if not len(accuracy):
        return 0.0
    order = np.argsort(train_time, kind="stable")
    height = np.maximum.accumulate(accuracy[order]) - ref_accuracy  # the best accuracy this fast or faster
    width = np.diff(np.r_[train_time[order], ref_time])
    return float(np.sum(width * height))


def runtime_accuracy_frontier(table) -> Frontier:
    return derived(trials_table(table), _frontier)


def _frontier(table: pd.DataFrame) -> Frontier:
    points = trained(table).dropna(subset=["accuracy", "train_time_s"])
    ok = points["outcome"] == "ok"
    if not ok.any():
        raise NotEnoughData("the runtime-accuracy frontier needs at least one trial with status ok, "
                            "an accuracy and a train_time_s")
    reference = (0.0, REFERENCE_TIME_MARGIN * float(points.loc[ok, "train_time_s"].max()))
    columns = ["number", "framework", REGIME, "accuracy", "train_time_s", "outcome", "seed", "config_id"]
    points = points[columns + [c for c in ("is_default",) if c in points]].copy()
    points["is_default"] = defaults_of(points)
    volumes = {**_fronts(points, ok, ALL, "on_frontier", reference),
               **_fronts(points, ok, points["framework"], "on_framework_frontier", reference)}
    summary = _summary(table, points, volumes, reference)
    points = points.assign(order=points[REGIME].map(regime_position))
    points = points.sort_values(["order", "framework", "train_time_s"]).drop(columns="order")
    return Frontier(points.reset_index(drop=True), summary, reference)


def _fronts(points: pd.DataFrame, ok: pd.Series, scope, column: str, reference: tuple) -> dict:
    """Mark `column` on the frontier of each regime within each scope (ALL, or each point's framework);
    returns {(scope, regime): hypervolume}."""
    points[column] = False
    scopes = pd.Series(scope, index=points.index)[ok]
    volumes = {}
    for (scope, regime), rows in points[ok].groupby([scopes, points.loc[ok, REGIME]]):
        mask = pareto_mask(rows["accuracy"], rows["train_time_s"])
        points.loc[rows.index[mask], column] = True
        volumes[(scope, regime)] = _volume(rows[mask], reference)
    return volumes


def _volume(front: pd.DataFrame, reference: tuple) -> float:
    return hypervolume(front["accuracy"].to_numpy(), front["train_time_s"].to_numpy(), reference)


def _summary(table: pd.DataFrame, points: pd.DataFrame, volumes: dict, reference: tuple) -> pd.DataFrame:
    """Per regime and scope: every final trial counted by outcome, the frontier's size, best accuracy (of one
    trial), hypervolume, and the best configuration by mean over seeds with its intervals."""
    counts = grouped(_scoped(table), keys=(REGIME, "scope"), outcomes=True)
    ok = points[points["outcome"] == "ok"]
    fronts = pd.concat([ok[ok["on_frontier"]].assign(scope=ALL), ok[ok["on_framework_frontier"]].assign(
        scope=ok["framework"])])
    key = pd.MultiIndex.from_frame(counts[["scope", REGIME]])
    counts["n_on_frontier"] = fronts.groupby(["scope", REGIME]).size().reindex(key).fillna(0).astype(int).to_numpy()
    counts["hypervolume"] = pd.Series(volumes, dtype=float).reindex(key).fillna(0.0).to_numpy()
    counts["hypervolume_fraction"] = counts["hypervolume"] / (1.0 * reference[1])
    best = _scoped(ok).groupby(["scope", REGIME])["accuracy"].max()
    counts["best_accuracy"] = best.reindex(key).to_numpy()
    counts = counts.merge(_best(table), on=["scope", REGIME], how="left")
    counts = counts[["scope", REGIME] + [c for c in counts if c not in ("scope", REGIME)]]
    return counts.sort_values([REGIME, "scope"], ignore_index=True, key=lambda c: c.map(regime_position)
                              if c.name == REGIME else c.ne(ALL).astype(str) + c)


def _best(table: pd.DataFrame) -> pd.DataFrame:
    """Per regime and scope: the best configuration by mean over seeds, with its accuracy and train time
    and their intervals (`seeds.best_configurations`)."""

    ok = table[table["outcome"] == "ok"]
    columns = ["scope", REGIME, "best_configuration", "best_accuracy_interval", "best_time_interval"]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    best = best_configurations(_scoped(ok).assign(framework=lambda t: t["scope"]), ("framework", REGIME))
    return best.rename(columns={"framework": "scope"})[columns]


def _scoped(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row twice: in scope "all" and in the scope of its framework."""
    return pd.concat([rows.assign(scope=ALL), rows.assign(scope=rows["framework"])])
