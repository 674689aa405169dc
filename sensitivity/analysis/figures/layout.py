"""Layout every figure of one study shares: the cap on what a trace draws (`drawn`), a grid of panels, ordered
category axes, one series per framework and regime (native first), and one panel per parameter.

A scattered cloud draws at most POINTS_MAX points per trace, and learning curves at most CURVES_MAX curves per
trace: beyond that a random subsample (seeded), said in the trace's name ("drawn: 3,000 of 40,000"). Every
number the figure states (counts, frontiers, medians, hypervolumes) is computed from all the trials; a page of
100,000 points per trace would not open.
"""
from __future__ import annotations

import math

import pandas as pd

from sensitivity.analysis.figures.style import (add_default_marks, colours, dash, finish, go, make_subplots,
                                                regime_title, series_name, symbol)
from sensitivity.analysis.table import REGIME, regime_position, regimes_of

POINTS_MAX, CURVES_MAX = 3_000, 300


def drawn(rows: pd.DataFrame, limit=None, keep=None, seed: int = 0) -> tuple:
    """(the rows a trace draws, a note for its name): all of them up to `limit` (POINTS_MAX), else a seeded
    random subsample of `limit`, always with the rows of `keep` (a mask: a frontier's points)."""
    limit = POINTS_MAX if limit is None else limit
    if len(rows) <= limit:
        return rows, ""
    kept = rows[keep] if keep is not None else rows.iloc[:0]
    rest = rows.drop(kept.index)
    chosen = pd.concat([kept, rest.sample(max(0, limit - len(kept)), random_state=seed)]).sort_index()
    return chosen, f"; drawn: {len(chosen):,} of {len(rows):,}"


def panel_grid(titles, cols: int = 3, height_per_row: int = 320):
    rows = max(1, math.ceil(len(titles) / cols))
    fig = make_subplots(rows=rows, cols=min(cols, len(titles)), subplot_titles=list(titles),
                        horizontal_spacing=0.08, vertical_spacing=0.5 / rows)
    return fig, [(i // cols + 1, i % cols + 1) for i in range(len(titles))], rows * height_per_row + 120


def ordered_axis(fig, labels, row, col) -> None:
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(labels), row=row, col=col)


def regime_series(rows: pd.DataFrame, framework: str = "framework"):
    """(framework, regime, rows) for each framework and regime in `rows`, native first."""
    groups = rows.groupby([framework, REGIME], sort=True)
    return [(fw, regime, part) for (fw, regime), part in
            sorted(groups, key=lambda group: (regime_position(group[0][1]), group[0][0]))]


def per_parameter(data: pd.DataFrame, y: str, *, hover, title: str, y_title: str, marks, legend):
    """Subplots per parameter, one line per framework and regime over the parameter's ordered values or
    bins; `marks(rows)` gives (mask, y) of the points to star as framework defaults, `legend(name, line)`
    the line's legend entry with its n."""
    names = list(dict.fromkeys(data["parameter"]))
    fig, positions, height = panel_grid(names)
    palette, regimes = colours(data["framework"]), regimes_of(data)
    hovers = hover(data)  # made once for all lines: a string operation per line cost more than the figure
    for name, (row, col) in zip(names, positions):
        rows = data[data["parameter"] == name].sort_values("order")
        ordered_axis(fig, rows.drop_duplicates("order")["value"], row, col)
        for framework, regime, line in regime_series(rows):
            series = series_name(framework, regime, regimes)
            fig.add_trace(go.Scatter(x=line["value"], y=line[y], mode="lines+markers", name=legend(series, line),
                                     legendgroup=series, showlegend=(row, col) == (1, 1),
                                     line=dict(color=palette[framework], dash=dash(regime)),
                                     marker=dict(color=palette[framework], symbol=symbol(regime)),
                                     hovertext=hovers[line.index].to_numpy(dtype=str), hoverinfo="text"),
                          row=row, col=col)
        fig.update_xaxes(tickangle=-30, automargin=True, tickfont=dict(size=10), row=row, col=col)
        mask, marked_y = marks(rows)
        add_default_marks(fig, rows["value"][mask], marked_y[mask], rows["framework"][mask] + " (" +
                          rows[REGIME][mask] + ") default", row, col)
        fig.update_yaxes(title=y_title if col == 1 else None, row=row, col=col)
    return finish(fig, regime_title(title, regimes), height)
