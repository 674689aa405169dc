"""Parallel coordinates: each trained trial one line across an axis per parameter, coloured by its objective, as
W&B, HiPlot and optuna-dashboard draw them (`tables.axes.trial_axes`). A categorical parameter's axis shows its
levels, a discrete number's the values it can take (batch sizes 16, 32, 64), another log-scale one its powers of
ten. At most LINES_MAX lines: beyond that a seeded random sample, the best LINES_BEST trials (at most half the lines)
always among them, and the title says how many of how many are drawn."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.style import finish, go, regime_title
from sensitivity.analysis.table import PARAM, regimes_of
from sensitivity.analysis.tables.axes import ticks, trial_axes

TITLE = "Parallel coordinates"  # the heading of its report section
LINES_MAX = 1_000
LINES_BEST = 50
ANY_STUDY = True  # drawn for a study another program wrote too: it needs no framework


class Info(NamedTuple):
    """Fields:
    - rows: one row per drawn trial: number, semantics (its regime; none for a study another program wrote),
      objective, and param_NAME per parameter: its position on the axis (log10 of the value on a log axis, the
      level's index on a category axis, else the value)
    - axes: one row per parameter that varies, in the order drawn: parameter, axis (linear, log or category),
      levels (a category axis' labels, or a discrete number's values, joined by "|", else empty)
    - objective: what colours the lines ("accuracy", or the study's first objective and its direction)
    - drawn: [lines drawn, trained trials]
    """
    rows: pd.DataFrame
    axes: pd.DataFrame
    objective: str
    drawn: list


def compute(table, parameters=None, lines: int = LINES_MAX) -> Info:
    rows, axes, objective = trial_axes(table, parameters, "parallel coordinates")
    total = len(rows)
    if total > lines:
        ascending = "minimize" in objective
        best = rows.sort_values("objective", ascending=ascending).head(_kept(lines))
        rest = rows.drop(best.index).sample(lines - len(best), random_state=0)
        rows = pd.concat([best, rest]).sort_index()
    return Info(rows.reset_index(drop=True), axes, objective, [len(rows), total])


def _kept(lines: int) -> int:
    """How many of the best trials a capped figure keeps: LINES_BEST, at most half its lines."""
    return min(LINES_BEST, lines // 2)


def plot(info: Info):
    rows, axes = info.rows, info.axes
    dimensions = []
    regimes = regimes_of(rows)
    if len(regimes) > 1:  # the regimes kept apart: an axis of their own, never pooled unseen
        codes = rows["semantics"].map({r: i for i, r in enumerate(regimes)}).to_numpy(dtype=float)
        dimensions.append(dict(label="regime", values=codes, tickvals=list(range(len(regimes))), ticktext=regimes,
                               range=[-0.5, len(regimes) - 0.5]))
    for name, axis, levels in zip(axes["parameter"], axes["axis"], axes["levels"]):
        values = rows[PARAM + name].to_numpy(dtype=float)
        dimensions.append(dict(label=f"{name} (log)" if axis == "log" else name, values=values,
                               **ticks(axis, levels, values)))
    objective = rows["objective"].to_numpy(dtype=float)
    dimensions.append(dict(label=info.objective, values=objective))
    fig = go.Figure(go.Parcoords(line=dict(color=objective, colorscale="Viridis", showscale=True,
                                           colorbar=dict(title=info.objective)), dimensions=dimensions))
    shown, total = info.drawn
    note = f"{total} trained trials" if shown == total else (f"drawn: {shown} of {total} trained trials, the best "
                                                             f"{_kept(shown)} among them")
    title = regime_title(f"Parallel coordinates: each trial a line, coloured by {info.objective} ({note})",
                         regimes_of(rows))
    return finish(fig, title, 520).update_layout(margin=dict(l=80, r=80))
