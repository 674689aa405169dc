"""Parameter values as every analysis shows them: their Optuna distributions, one numeric order, bins, labels.

Split from `sensitivity.analysis.table`, which reads the trials; this module only reads their `param_` columns.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.table import PARAM, parameter_names


def parameter_distributions(table: pd.DataFrame, framework: bool = True) -> dict:
    """Optuna distributions of the parameters: the study's where they hold every value, else inferred
    from the column (categorical for text; int or float otherwise, on a log scale when positive and
    spanning two decades or more)."""
    # lazy: optuna
    from optuna.distributions import json_to_distribution

    stored = table.attrs.get("distributions") or {}
    out = {}
    for name in parameter_names(table, framework):
        values = table[PARAM + name].dropna()
        if values.empty:
            continue
        dist = json_to_distribution(stored[name]) if name in stored else None
        out[name] = dist if dist is not None and _holds(dist, values) else _inferred(values)
    return out


def _holds(dist, values: pd.Series) -> bool:
    if hasattr(dist, "choices"):
        return set(values.unique().tolist()) <= set(dist.choices)
    numbers = pd.to_numeric(values, errors="coerce")
    return numbers.notna().all() and dist.low <= numbers.min() and numbers.max() <= dist.high


def _inferred(values: pd.Series):
    # lazy: optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return CategoricalDistribution(sorted(values.unique().tolist(), key=numeric_sort_key))
    low, high = float(values.min()), float(values.max())
    log = low > 0 and high / low >= 100
    if (values == values.round()).all():
        return IntDistribution(int(low), int(high), log=log)
    return FloatDistribution(low, high, log=log)


def is_categorical(dist) -> bool:
    return hasattr(dist, "choices")


def is_number(value) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))


def is_numeric_choice(dist) -> bool:
    """A categorical distribution of numbers (batch sizes 32, 64, 128): shown in numeric order everywhere."""
    return is_categorical(dist) and all(is_number(c) for c in dist.choices)


def numeric_sort_key(value) -> tuple:
    """The one order of parameter values on every axis and in every list: numbers by value (32 < 64 < 128),
    then text, then missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (2, 0.0, "")
    if is_number(value):
        return (0, float(value), "")
    return (1, 0.0, str(value))


def bin_parameter(values: pd.Series, dist, bins: int = 5) -> pd.DataFrame:
    """Each value's bin: `value` (its label), `order` (for sorting) and `centre` (NaN for text categories).
    Categories, and numbers with at most `bins` distinct values, are their own bins, in numeric order where
    they are numbers (a categorical batch size too); other numbers fall in `bins` equal bins over the
    distribution's range (in log space for a log distribution)."""
    values = values.dropna()
    distinct = values.unique()
    numeric = ((not is_categorical(dist) or is_numeric_choice(dist)) and pd.api.types.is_numeric_dtype(values)
               and not pd.api.types.is_bool_dtype(values))
    if is_categorical(dist) or not numeric or len(distinct) <= bins:
        ordered = sorted(distinct.tolist(), key=numeric_sort_key)
        order = values.map({v: i for i, v in enumerate(ordered)})
        return pd.DataFrame({"value": values.map({v: format_value(v) for v in ordered}), "order": order.astype(int),
                             "centre": values.astype(float) if numeric else np.nan}, index=values.index)
    log = bool(getattr(dist, "log", False))
    scale = (lambda x: np.log10(x)) if log else (lambda x: x)
    low, high = min(dist.low, values.min()), max(dist.high, values.max())
    edges = np.linspace(scale(low), scale(high), bins + 1)
    index = np.clip(np.searchsorted(edges, scale(values.to_numpy(float)), side="right") - 1, 0, bins - 1)
    unscale = (lambda x: 10.0 ** x) if log else (lambda x: x)
    labels = [f"[{_edge(unscale(edges[i]))}, {_edge(unscale(edges[i + 1]))}" + ("]" if i == bins - 1 else ")")
              for i in range(bins)]
    centres = unscale((edges[:-1] + edges[1:]) / 2)
    return pd.DataFrame({"value": np.asarray(labels)[index], "order": index, "centre": centres[index]},
                        index=values.index)


def _edge(value: float) -> str:
    """A bin edge, short enough for a tick label: two significant digits."""
    return f"{value:.2g}"


def format_value(value) -> str:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return f"{value:.3g}"


def configuration_label(rows: pd.DataFrame, names) -> pd.Series:
    """A readable label of each row's parameters `names` ("lr=0.01, batch_size=64"); "default" for none."""
    columns = [_formatted(rows[PARAM + n], n) for n in names]
    labels = [", ".join(filter(None, parts)) or "default" for parts in zip(*columns)] if names else (
        ["default"] * len(rows))
    return pd.Series(labels, index=rows.index, dtype=object)


def _formatted(values: pd.Series, name: str) -> list:
    """Each value as "name=value" ("" where missing), each distinct value formatted once: a column of numbers
    as numbers (`format_value`'s `.3g`, without its checks per value), any other column value by value."""
    if _numbers(values):
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        texts = [f"{name}={v:.3g}" for v in uniques.tolist()]
    else:
        codes, uniques = pd.factorize(values.astype(object), use_na_sentinel=True)
        texts = [f"{name}={format_value(v)}" if not _missing(v) else "" for v in uniques]
    return np.array(texts + [""], dtype=object)[codes].tolist()  # code -1 (missing) takes the last, empty text


def _numbers(values: pd.Series) -> bool:
    """A column of int or float numbers (not booleans), whose values `format_value` writes with `.3g`."""
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values) and not isinstance(
        values.dtype, pd.CategoricalDtype)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
