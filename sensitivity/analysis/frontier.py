"""The runtime-accuracy Pareto frontier: maximise `accuracy`, minimise `train_time_s`, read from the
trials' results whatever the study's objectives were, overall and per framework, with its hypervolume.

Only trials with status ok can be on a frontier. Diverged trials are shown and counted but never on it
(a fast run at chance level is not a trade-off anyone wants); pruned and failed trials are counted only.

Hypervolume: the area, in (accuracy, train time) space, that the frontier dominates up to the reference
point (accuracy 0, 1.1 x the slowest ok trial's train time). The reference point is the same for every
framework, so their hypervolumes compare; `hypervolume_fraction` divides by the reference box
(1 x reference time), so 1.0 would be perfect accuracy in no time.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.table import NotEnoughData, defaults_of, grouped, trained, trials_table

REFERENCE_TIME_MARGIN = 1.1
ALL = "all"


class Frontier(NamedTuple):
    points: pd.DataFrame  # trained trials: number, framework, accuracy, train_time_s, outcome, on_frontier, ...
    summary: pd.DataFrame  # one row per scope ("all", then each framework): counts, hypervolume
    reference_point: tuple  # (accuracy, train_time_s)


def pareto_mask(accuracy: np.ndarray, train_time: np.ndarray) -> np.ndarray:
    """Which points no other point beats on both accuracy (higher) and train time (lower); ties all kept."""
    from optuna.study._multi_objective import _is_pareto_front

    if len(accuracy) == 0:
        return np.zeros(0, dtype=bool)
    loss = np.column_stack([-np.asarray(accuracy, float), np.asarray(train_time, float)])
    return _is_pareto_front(loss, assume_unique_lexsorted=False)


def hypervolume(accuracy: np.ndarray, train_time: np.ndarray, reference_point: tuple) -> float:
    """The 2-D hypervolume (accuracy x seconds) dominated by the points up to `reference_point`."""
    from optuna._hypervolume import compute_hypervolume

    ref_accuracy, ref_time = reference_point
    loss = np.column_stack([-np.asarray(accuracy, float), np.asarray(train_time, float)])
    loss = loss[(loss[:, 0] <= -ref_accuracy) & (loss[:, 1] <= ref_time)]
    return float(compute_hypervolume(loss, np.array([-ref_accuracy, ref_time]))) if len(loss) else 0.0


def runtime_accuracy_frontier(table) -> Frontier:
    table = trials_table(table)
    points = trained(table).dropna(subset=["accuracy", "train_time_s"])
    ok = points["outcome"] == "ok"
    if not ok.any():
        raise NotEnoughData("the runtime-accuracy frontier needs at least one trial with status ok, "
                            "an accuracy and a train_time_s")
    reference = (0.0, REFERENCE_TIME_MARGIN * float(points.loc[ok, "train_time_s"].max()))
    columns = ["number", "framework", "accuracy", "train_time_s", "outcome", "seed", "config_id"]
    points = points[columns + [c for c in ("is_default",) if c in points]].copy()
    points["is_default"] = defaults_of(points)
    points["on_frontier"] = False
    points.loc[ok, "on_frontier"] = pareto_mask(points.loc[ok, "accuracy"], points.loc[ok, "train_time_s"])
    points["on_framework_frontier"] = False
    volumes = {ALL: _volume(points[points["on_frontier"]], reference)}
    for framework, rows in points[ok].groupby("framework"):
        mask = pareto_mask(rows["accuracy"], rows["train_time_s"])
        points.loc[rows.index[mask], "on_framework_frontier"] = True
        volumes[framework] = _volume(rows[mask], reference)
    summary = _summary(table, points, volumes, reference)
    return Frontier(points.sort_values(["framework", "train_time_s"]).reset_index(drop=True), summary, reference)


def _volume(front: pd.DataFrame, reference: tuple) -> float:
    return hypervolume(front["accuracy"].to_numpy(), front["train_time_s"].to_numpy(), reference)


def _summary(table: pd.DataFrame, points: pd.DataFrame, volumes: dict, reference: tuple) -> pd.DataFrame:
    """Per scope: every final trial counted by outcome, the frontier's size, best accuracy, hypervolume."""
    scoped = pd.concat([table.assign(scope=ALL), table.assign(scope=table["framework"])])
    counts = grouped(scoped, keys=("scope",), outcomes=True)
    on_front = {ALL: int(points["on_frontier"].sum()),
                **points.groupby("framework")["on_framework_frontier"].sum().astype(int).to_dict()}
    counts["n_on_frontier"] = counts["scope"].map(on_front).fillna(0).astype(int)
    counts["hypervolume"] = counts["scope"].map(volumes).fillna(0.0)
    counts["hypervolume_fraction"] = counts["hypervolume"] / (1.0 * reference[1])
    best_ok = pd.concat([points[points.outcome == "ok"].assign(scope=ALL),
                         points[points.outcome == "ok"].assign(scope=points["framework"])])
    counts["best_accuracy"] = counts["scope"].map(best_ok.groupby("scope")["accuracy"].max())
    return counts.sort_values("scope", key=lambda s: s.ne(ALL).astype(str) + s, ignore_index=True)
