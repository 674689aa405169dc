"""Slice: accuracy against each parameter, one point per complete trial (`tables.curves.slice_points`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.layout import drawn, panel_grid, ordered_axis, regime_series
from sensitivity.analysis.figures.style import add_default_marks, colours, finish, go, regime_title, series_name, symbol
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.curves import slice_points
from sensitivity.analysis.tables.parameter_values import format_value, numeric_sort_key

TITLE = "Slice"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per trained trial and parameter: parameter, value (the trial's value), scale (log, linear or
      category: the axis), accuracy (0-1), framework, semantics, number (the trial), outcome, is_default
    """
    rows: pd.DataFrame


def compute(table, parameters=None) -> Info:
    return Info(slice_points(table, parameters))


def plot(result: Info):
    points = result.rows
    names = list(points["parameter"].unique())  # in order of appearance
    fig, positions, height = panel_grid(names)
    palette, regimes = colours(points["framework"]), regimes_of(points)
    counts = points.drop_duplicates("number").groupby(["framework", REGIME]).size()
    for name, (row, col) in zip(names, positions):
        rows = points[points["parameter"] == name]
        scale = rows["scale"].iloc[0]
        text = (lambda part: part.assign(value=part["value"].map(format_value))) if scale == "category" else (
            lambda part: part)  # category labels for the drawn points only
        if scale == "category":
            ordered_axis(fig, [format_value(v) for v in sorted(rows["value"].unique().tolist(), key=numeric_sort_key)],
                          row, col)
        for framework, regime, part in regime_series(rows):
            series = series_name(framework, regime, regimes)
            part, note = drawn(part)
            part = text(part)
            fig.add_trace(go.Scattergl(  # no object arrays where avoidable: plotly deep-copies those item by item
                x=part["value"].to_numpy(dtype=object if scale == "category" else float),
                y=part["accuracy"].to_numpy(), mode="markers",
                name=f"{series} (n={counts[(framework, regime)]} trials{note})", legendgroup=series,
                showlegend=(row, col) == (1, 1),
                marker=dict(color=palette[framework], size=5, opacity=0.5, symbol=symbol(regime)),
                hovertext=("#" + part["number"].astype(str) + " " + part["outcome"]).to_numpy(dtype=str),
                hoverinfo="text+x+y"),
                row=row, col=col)
        marked = text(rows[rows["is_default"]])
        add_default_marks(fig, marked["value"], marked["accuracy"], marked["framework"] + " (" + marked[REGIME]
                          + ") default", row, col)
        if scale == "log":
            fig.update_xaxes(type="log", row=row, col=col)
        fig.update_yaxes(title="accuracy" if col == 1 else None, row=row, col=col)
    return finish(fig, regime_title("Slice: accuracy against each parameter (complete trials)", regimes), height)
