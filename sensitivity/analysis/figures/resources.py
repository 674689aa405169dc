"""Resource use: the median of each resource per framework and regime, and of the framework defaults
(`tables.resources.resource_use`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.layout import panel_grid
from sensitivity.analysis.figures.style import add_default_marks, colours, finish, go, regime_title, series_name
from sensitivity.analysis.table import BY_FRAMEWORK, REGIME, regimes_of
from sensitivity.analysis.tables.resources import DEFAULTS, UNITS, resource_use

TITLE = "Resource use"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per framework, regime and subset ("all trials", then "framework defaults"): n_trials, n_seeds
      and the median of each resource recorded (a column per key of `units`)
    - units: {resource column: its unit}, for the resources present (train_time_s: "s", peak_rss_mb: "MB", ...)
    """
    rows: pd.DataFrame
    units: dict

    @classmethod
    def of(cls, usage: pd.DataFrame) -> "Info":
        """The result of a frame of `resource_use`."""
        return cls(usage, {m: unit for m, unit in UNITS.items() if m in usage})


def compute(table, keys=BY_FRAMEWORK, with_defaults: bool = True) -> Info:
    return Info.of(resource_use(table, keys, with_defaults))


def plot(result: Info):
    """Bars per framework and regime (the framework's colour; canonical hatched), n on each tick."""
    usage, metrics = result.rows, list(result.units)
    fig, positions, height = panel_grid([f"{m} ({result.units[m]}, median)" for m in metrics])
    everything, defaults = usage[usage["subset"] != DEFAULTS], usage[usage["subset"] == DEFAULTS]
    palette, regimes = colours(usage["framework"]), regimes_of(usage)
    ticks = {(fw, r): f"{series_name(fw, r, regimes)}<br>n={n}, {s} seed{'s' if s != 1 else ''}" for fw, r, n, s in
             zip(everything["framework"], everything[REGIME], everything["n_trials"], everything["n_seeds"])}

    def tick(rows):
        return pd.Series(list(zip(rows["framework"], rows[REGIME])), index=rows.index, dtype=object).map(ticks)
    for metric, (row, col) in zip(metrics, positions):
        fig.add_trace(go.Bar(x=tick(everything), y=everything[metric], showlegend=False,
                             marker=dict(color=everything["framework"].map(palette).tolist(), pattern=dict(
                                 shape=["" if r == "native" else "/" for r in everything[REGIME]])),
                             hovertext=tick(everything).str.replace("<br>", " "),
                             hoverinfo="text+y"), row=row, col=col)
        add_default_marks(fig, tick(defaults), defaults[metric], defaults["framework"] + " (" + defaults[REGIME]
                          + ") defaults: n=" + defaults["n_trials"].astype(str), row, col)
    return finish(fig, regime_title("Resource use per framework (trained trials)", regimes), height)
