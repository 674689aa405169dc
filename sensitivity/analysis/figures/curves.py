"""Learning curves: each trial's accuracy per epoch (faint, at most CURVES_MAX a trace) and the median per
framework and regime (`tables.curves.learning_curves`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.figures.layout import CURVES_MAX, drawn, regime_series
from sensitivity.analysis.figures.style import (add_default_marks, colours, dash, finish, framework_label, go,
                                                regime_title, series_name, symbol)
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.curves import CURVE_FIELDS, curve_metric, learning_curves

TITLE = "Learning curves"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per trial and epoch (ok, diverged and pruned trials): number, framework, semantics, config_id,
      seed, outcome, is_default, epoch, then the curve fields asked (train_loss, val_accuracy, test_accuracy,
      seconds)
    - metric: the accuracy drawn: val_accuracy where recorded, else test_accuracy
    """
    rows: pd.DataFrame
    metric: str


def compute(table, fields=CURVE_FIELDS) -> Info:
    rows = learning_curves(table, fields)
    return Info(rows, curve_metric(rows))


def plot(result: Info):
    curves, metric = result.rows, result.metric
    palette, regimes, fig = colours(curves["framework"]), regimes_of(curves), go.Figure()
    series = regime_series(curves.sort_values(["number", "epoch"]))
    for framework, regime, rows in series:  # each trial's curve (at most CURVES_MAX), faint where there are many
        numbers = pd.Series(rows["number"].unique())
        shown, note = drawn(numbers, CURVES_MAX)
        lines = rows[rows["number"].isin(shown)] if note else rows
        breaks = np.flatnonzero(np.diff(lines["number"].to_numpy())) + 1  # a gap between trials
        x = np.insert(lines["epoch"].to_numpy(float), breaks, np.nan)
        y = np.insert(lines[metric].to_numpy(float), breaks, np.nan)
        n_trials, name = len(numbers), series_name(framework, regime, regimes)
        fig.add_trace(go.Scattergl(x=x, y=y, mode="lines", name=framework_label(name, n_trials, rows["seed"].nunique())
                                   + note.replace("drawn", "curves drawn"), legendgroup=name,
                                   line=dict(color=palette[framework], width=1, dash=dash(regime)),
                                   opacity=min(0.35, max(0.02, 30 / len(shown))), hoverinfo="skip"))
    # then the medians on top, of every trial (WebGL too: it draws above svg traces)
    for framework, regime, rows in series:
        median, name = rows.groupby("epoch")[metric].median(), series_name(framework, regime, regimes)
        fig.add_trace(go.Scattergl(x=median.index, y=median.to_numpy(), mode="lines+markers", legendgroup=name,
                                   name=f"{name} median",
                                   line=dict(color=palette[framework], width=4, dash=dash(regime)),
                                   marker=dict(size=8, symbol=symbol(regime), line=dict(color="white", width=1))))
    last = curves[curves["is_default"].astype(bool)].sort_values("epoch").drop_duplicates("number", keep="last")
    add_default_marks(fig, last["epoch"], last[metric], last["framework"] + " (" + last[REGIME] + ") default #"
                      + last["number"].astype(str))
    fig.update_xaxes(title="epoch", dtick=1)
    fig.update_yaxes(title=metric.replace("_", " "))
    return finish(fig, regime_title("Learning curves (ok, diverged and pruned trials)", regimes), 520)
