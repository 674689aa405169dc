"""The trials as points of their search space, for the figures that draw every parameter at once (parallel
coordinates, partial dependence): the objective every trial has, and each parameter on the axis its space gives it.

The objective is the trials' accuracy where they record one (this tool's studies), else the study's first value
(a study another program wrote), named by its direction. A parameter's axis is `log` where its distribution is on a
log scale (a categorical of numbers spanning a decade or more too), `category` for a categorical of text (its
levels in the one numeric order of `parameter_values`), else `linear`; `position` is where a value lies on it:
log10 of the value, a level's index, or the value. A number that takes few values (a numeric choice, a short integer
range: `discrete_levels`) keeps them as its levels, so that no figure reads it between two of them.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.table import PARAM, NotEnoughData, parameter_names, trained, trials_table
from sensitivity.analysis.tables.parameter_values import (format_value, is_categorical, is_numeric_choice,
                                                          numeric_sort_key, parameter_distributions)

NEEDS = "needs complete trials with an objective value and at least one parameter that varies"
DISCRETE_MAX = 20  # an integer range of at most this many values keeps them as its levels


def objective_of(table: pd.DataFrame) -> tuple:
    """(the column, its label): accuracy where any trained trial has one, else value_0 with its direction."""
    rows = trained(table)
    if "accuracy" in rows and rows["accuracy"].notna().any():
        return "accuracy", "accuracy"
    if "value_0" in rows and pd.to_numeric(rows["value_0"], errors="coerce").notna().any():
        directions = table.attrs.get("directions") or []
        return "value_0", "objective" + (f" ({directions[0]})" if directions else "")
    return None, None


def axis_of(dist) -> str:
    if is_numeric_choice(dist):
        low, high = min(dist.choices), max(dist.choices)
        return "log" if low > 0 and high / low >= 10 else "linear"
    return "category" if is_categorical(dist) else "log" if getattr(dist, "log", False) else "linear"


def discrete_levels(dist) -> list:
    """The values a number can take, as exact labels (`_exact`), where they are few: a numeric choice's choices
    (batch sizes 16, 32, 64), an integer range's integers where at most DISCRETE_MAX; [] for a continuous or long
    range."""
    # lazy: optuna
    from optuna.distributions import IntDistribution

    if is_numeric_choice(dist):
        return [_exact(v) for v in sorted(dist.choices)]
    if isinstance(dist, IntDistribution) and not dist.log and (dist.high - dist.low) // dist.step < DISCRETE_MAX:
        return [_exact(v) for v in range(dist.low, dist.high + 1, dist.step)]
    return []


def _exact(value) -> str:
    """A number as the shortest text that reads back as it (1024, 0.001; not format_value's 1.02e+03): a discrete
    level is both a tick's label and the place a figure reads it."""
    return str(int(value)) if isinstance(value, (int, np.integer)) else str(float(value))


def levels_of(values: pd.Series) -> list:
    """A categorical column's levels as labels, in the one numeric order."""
    return [format_value(v) for v in sorted(values.dropna().unique().tolist(), key=numeric_sort_key)]


def position(values: pd.Series, axis: str, levels=()) -> np.ndarray:
    """Where each value lies on its axis (NaN where missing)."""
    if axis == "category":
        index = {label: i for i, label in enumerate(levels)}
        return np.array([index.get(format_value(v), np.nan) if v is not None and v == v else np.nan
                         for v in values.tolist()], dtype=float)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    if axis == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(numbers > 0, np.log10(numbers), np.nan)
    return numbers


def ticks(axis: str, levels: str, positions: np.ndarray) -> dict:
    """A figure axis' tickvals and ticktext (and a category's range) for a parameter at `positions`: a category's
    levels, a discrete number's values, a log axis' powers of ten written as values (0.001, not -3); {} otherwise."""
    if axis == "category":
        labels = levels.split("|")
        return dict(tickvals=list(range(len(labels))), ticktext=labels, range=[-0.5, len(labels) - 0.5])
    if levels:  # a discrete number: ticked at the values it can take
        labels = levels.split("|")
        return dict(tickvals=position(pd.Series(labels), axis).tolist(), ticktext=labels)
    if axis == "log":
        finite = positions[np.isfinite(positions)]
        low, high = (math.floor(finite.min()), math.ceil(finite.max())) if len(finite) else (0, 1)
        powers = list(range(low, high + 1))
        return dict(tickvals=powers, ticktext=[f"{10.0 ** p:g}" for p in powers])
    return {}


def trial_axes(table, parameters=None, what: str = "this figure") -> tuple:
    """(rows, axes, objective label): the trained trials with a finite objective (`objective`), their number and
    regime (`semantics`), and a column `param_NAME` per parameter holding its `position`; axes: one row per
    parameter that varies (parameter, axis, levels: the categories' labels, or a discrete number's values
    (`discrete_levels`), joined by "|", else "")."""
    table = trials_table(table)
    column, label = objective_of(table)
    if column is None:
        raise NotEnoughData(f"{what} {NEEDS}")
    rows = trained(table)
    rows = rows[np.isfinite(pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float))]
    distributions = parameter_distributions(table)
    names = [n for n in (parameters or parameter_names(table)) if n in distributions
             and rows[PARAM + n].nunique() > 1]
    if rows.empty or not names:
        raise NotEnoughData(f"{what} {NEEDS}")
    out = pd.DataFrame({"number": rows["number"].to_numpy(), "semantics": rows["semantics"].to_numpy(dtype=object),
                        "objective": pd.to_numeric(rows[column]).to_numpy(dtype=float)})
    axes = []
    for name in names:
        axis = axis_of(distributions[name])
        levels = levels_of(rows[PARAM + name]) if axis == "category" else discrete_levels(distributions[name])
        out[PARAM + name] = position(rows[PARAM + name], axis, levels)
        axes.append({"parameter": name, "axis": axis, "levels": "|".join(levels)})
    return out, pd.DataFrame(axes, columns=["parameter", "axis", "levels"]), label
