"""Contour: mean accuracy per cell of a binned grid of each pair of parameters, per regime
(`tables.curves.contour_grid`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.figures.layout import panel_grid
from sensitivity.analysis.figures.style import add_default_marks, finish, go, regime_title
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.curves import contour_grid

TITLE = "Contour"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per cell of a binned grid, per pair of parameters and regime: x_parameter, y_parameter,
      semantics, x, y (bin centres, in the parameters' units), accuracy (mean, 0-1), n_trials, x_scale, y_scale (log
      or linear); rows with is_default True are the framework defaults' own trials (framework named), drawn as
      marks, not cells
    """
    rows: pd.DataFrame


def compute(table, parameters=None, bins: int = 10, max_parameters: int = 3) -> Info:
    return Info(contour_grid(table, parameters, bins, max_parameters))


def plot(result: Info):
    """A contour where the binned grid is mostly filled; a heatmap of the filled cells where it is sparse
    (contours drawn across empty cells would show values no trial measured). One panel per pair and regime."""
    grid = result.rows
    regimes = regimes_of(grid)
    panels = [(x, y, r) for x, y in dict.fromkeys(zip(grid["x_parameter"], grid["y_parameter"])) for r in regimes]
    fig, positions, height = panel_grid([f"{y} against {x}" + (f" ({r})" if len(regimes) > 1 else "")
                                    for x, y, r in panels], height_per_row=380)
    for (x_name, y_name, regime), (row, col) in zip(panels, positions):
        cells = grid[(grid["x_parameter"] == x_name) & (grid["y_parameter"] == y_name) & grid[REGIME].eq(regime)]
        x, y = _axis_values(cells, "x"), _axis_values(cells, "y")
        mean = ~cells["is_default"].astype(bool)
        filled = mean.sum() / max(1, x[mean].nunique() * y[mean].nunique())
        trace = go.Contour if filled >= 0.8 else go.Heatmap
        fig.add_trace(trace(x=x[mean], y=y[mean], z=cells["accuracy"][mean], coloraxis="coloraxis",
                            text=cells["n_trials"][mean], name=f"{y_name} | {x_name} ({regime})",
                            hovertemplate="%{x}, %{y}: mean accuracy %{z:.4f} (n=%{text} trials)<extra></extra>"),
                      row=row, col=col)
        add_default_marks(fig, x[~mean], y[~mean], cells["framework"][~mean].astype(str) + f" ({regime}) default",
                          row, col)
        fig.update_xaxes(title=_axis_title(cells, "x"), row=row, col=col)
        fig.update_yaxes(title=_axis_title(cells, "y"), row=row, col=col)
    fig.update_layout(coloraxis=dict(colorscale="Viridis", colorbar=dict(title="mean accuracy")))
    finish(fig, regime_title("Mean accuracy per cell of a binned grid (complete trials, all frameworks)", regimes),
           height)
    return fig.update_layout(legend=dict(orientation="h", y=-0.15))


def _axis_values(cells: pd.DataFrame, axis: str) -> pd.Series:
    values = cells[axis].astype(float)
    return np.log10(values) if (cells[f"{axis}_scale"] == "log").all() else values


def _axis_title(cells: pd.DataFrame, axis: str) -> str:
    name = cells[f"{axis}_parameter"].iloc[0]
    return f"log10({name})" if (cells[f"{axis}_scale"] == "log").all() else name
