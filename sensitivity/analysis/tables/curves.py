"""Learning curves from each trial's per-epoch curve, and the slice and contour views of accuracy over
the parameters.

Slice and contour are computed here from the table rather than with `optuna.visualization`, whose
contour interpolates every pair over every trial (far slower at 10,000 trials: docs/performance.md):
the contour is the mean accuracy per cell of a binned grid, empty where no trial fell, one grid per regime
(`semantics`): a cell never averages trials of both.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from sensitivity.analysis.tables.parameter_values import (bin_parameter, is_categorical, is_numeric_choice,
                                                   parameter_distributions)
from sensitivity.analysis.table import (PARAM, REGIME, TRAINED, NotEnoughData, defaults_of, parse_curves, trained,
                                        trials_table)

CURVE_FIELDS = ("train_loss", "val_accuracy", "test_accuracy", "seconds")
DRAWN_FIELDS = ("val_accuracy", "test_accuracy")  # what the figure draws (`curve_metric`): the others stay unread
TRIAL_COLUMNS = ["number", "framework", REGIME, "config_id", "seed", "outcome", "is_default"]


def learning_curves(table, fields=CURVE_FIELDS) -> pd.DataFrame:
    """One row per trial and epoch (trials that ran to a result, and pruned ones): the trial's columns, then epoch and
    `fields` of the curves (train_loss, val_accuracy, test_accuracy, seconds; DRAWN_FIELDS for a figure)."""
    table = trials_table(table)
    rows = table[table["outcome"].isin((*TRAINED, "pruned"))].assign(is_default=lambda t: defaults_of(t))
    curves = parse_curves(rows["curve"])
    lengths = np.array([len(curve) for curve in curves], dtype=int)
    rows, lengths = rows[lengths > 0], lengths[lengths > 0]
    if rows.empty:
        raise NotEnoughData("learning curves need trials with a per-epoch curve")
    points = [point for curve in curves for point in curve]
    out = pd.DataFrame({c: np.repeat(rows[c].to_numpy(), lengths) for c in TRIAL_COLUMNS})
    for field in ("epoch", *fields):  # a column at a time: a frame of a million dicts takes seconds
        values = [point.get(field) for point in points]
        out[field] = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce") if any(
            v is not None for v in values) else np.nan
    return out


def curve_metric(curves: pd.DataFrame) -> str:
    """The accuracy the curves carry: validation accuracy where recorded, else test accuracy."""
    return "val_accuracy" if curves["val_accuracy"].notna().any() else "test_accuracy"


def slice_points(table, parameters=None) -> pd.DataFrame:
    """Accuracy against each parameter, one row per trained trial and parameter: parameter, value,
    scale (log, linear or category), accuracy, framework, semantics, number, outcome, is_default."""
    table = trials_table(table)
    rows = trained(table).dropna(subset=["accuracy"]).assign(is_default=lambda t: defaults_of(t))
    distributions = parameter_distributions(table, framework=False)
    names = [n for n in (parameters or distributions) if n in distributions]
    if rows.empty or not names:
        raise NotEnoughData("the slice plot needs complete trials with an accuracy and at least one tuned "
                            "parameter besides the framework")
    parts = []
    for name in names:
        part = rows[["accuracy", "framework", REGIME, "number", "outcome", "is_default"]].assign(
            parameter=name, value=rows[PARAM + name].astype(object), scale=_scale(distributions[name]))
        parts.append(part[part["value"].notna()])
    return pd.concat(parts, ignore_index=True)


def _scale(dist) -> str:
    """log or linear for numbers; a categorical of numbers (batch sizes) is drawn as numbers, on a log axis
    where its choices span a decade or more; category for text."""
    if is_numeric_choice(dist):
        low, high = min(dist.choices), max(dist.choices)
        return "log" if low > 0 and high / low >= 10 else "linear"
    return "category" if is_categorical(dist) else "log" if getattr(dist, "log", False) else "linear"


def contour_grid(table, parameters=None, bins: int = 10, max_parameters: int = 3) -> pd.DataFrame:
    """Mean accuracy on a grid of bins for each pair of numeric parameters (by default the first
    `max_parameters` varied ones) and each regime: x_parameter, y_parameter, semantics, x, y (bin centres),
    accuracy, n_trials, x_scale, y_scale; rows with `is_default` True place the framework defaults' own
    trials."""
    table = trials_table(table)
    rows = trained(table).dropna(subset=["accuracy"])
    distributions = {n: d for n, d in parameter_distributions(table, framework=False).items()
                     if (not is_categorical(d) or is_numeric_choice(d)) and not d.single()}
    names = [n for n in (parameters or distributions) if n in distributions]
    names = names if parameters else names[:max_parameters]
    if rows.empty or len(names) < 2:
        raise NotEnoughData("the contour plot needs two numeric parameters varied over complete trials")
    defaults = defaults_of(rows)
    parts = []
    for x_name, y_name in combinations(names, 2):
        pair = rows.dropna(subset=[PARAM + x_name, PARAM + y_name])
        x_bins = bin_parameter(pair[PARAM + x_name], distributions[x_name], bins)
        y_bins = bin_parameter(pair[PARAM + y_name], distributions[y_name], bins)
        cells = pd.DataFrame({REGIME: pair[REGIME], "x": x_bins["centre"], "y": y_bins["centre"],
                              "accuracy": pair["accuracy"]})
        grid = cells.groupby([REGIME, "x", "y"]).agg(accuracy=("accuracy", "mean"), n_trials=("accuracy", "size"))
        grid = grid.reset_index().assign(is_default=False, framework="")  # cells mix the frameworks, not regimes
        marks = pair[defaults[pair.index]]
        if len(marks):
            grid = pd.concat([grid, pd.DataFrame({
                REGIME: marks[REGIME], "x": marks[PARAM + x_name], "y": marks[PARAM + y_name],
                "accuracy": marks["accuracy"], "n_trials": 1, "is_default": True,
                "framework": marks["framework"]})], ignore_index=True)
        parts.append(grid.assign(
            x_parameter=x_name, y_parameter=y_name, x_scale=_scale(distributions[x_name]),
            y_scale=_scale(distributions[y_name])))
    return pd.concat(parts, ignore_index=True)
