"""Seeds: each configuration's mean over seeds with its interval, per framework and regime
(`tables.seeds.seed_intervals`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.layout import regime_series
from sensitivity.analysis.figures.style import (add_default_marks, colours, finish, framework_label, go,
                                                regime_title, series_name, symbol)
from sensitivity.analysis.intervals import CONFIDENCE, interval_text
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.seeds import METRICS, framework_comparisons, seed_intervals

TITLE = "Seeds: mean and interval"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per framework, regime and configuration: config_id, n_seeds, dataset, the parameters (param_*),
      configuration (its label), is_default, and per metric <metric>_mean, _low, _high (the interval; the range for
      2 seeds, empty for 1), _n (seeds with a value), _method (t, range, single); then confidence
    - confidence: of the intervals (0.95: 95%)
    """
    rows: pd.DataFrame
    confidence: float

    @classmethod
    def of(cls, intervals: pd.DataFrame) -> "Info":
        """The result of a frame of `seed_intervals`."""
        return cls(intervals, float(intervals["confidence"].iloc[0]))


def compute(table, metrics=METRICS, confidence: float = CONFIDENCE) -> Info:
    return Info.of(seed_intervals(table, metrics, confidence))


def plot(result: Info, metric: str = "accuracy", top: int = 20):
    intervals = result.rows
    rows = framework_comparisons(intervals, metric, top)
    palette, regimes, fig = colours(rows["framework"]), regimes_of(rows), go.Figure()
    digits = 4 if metric.endswith("accuracy") else 2
    text = [interval_text(m, lo, hi, n, digits) for m, lo, hi, n in zip(
        rows[f"{metric}_mean"], rows[f"{metric}_low"], rows[f"{metric}_high"], rows[f"{metric}_n"])]
    rows = rows.assign(n_text="n=" + rows["n_seeds"].astype(str), hover=rows["framework"] + " (" + rows[REGIME]
                       + ") " + rows["configuration"] + "<br>" + pd.Series(text, index=rows.index))
    for framework, regime, part in regime_series(rows):
        fig.add_trace(go.Scatter(
            y=part["configuration"], x=part[f"{metric}_mean"], mode="markers+text", orientation="h",
            name=framework_label(series_name(framework, regime, regimes), part["n_seeds"].sum(),
                                 part["n_seeds"].max()), text=part["n_text"], textposition="middle right",
            marker=dict(color=palette[framework], size=9, symbol=symbol(regime)), hovertext=part["hover"],
            hoverinfo="text", error_x=dict(type="data", symmetric=False, array=part[f"{metric}_high"] - part[
                f"{metric}_mean"], arrayminus=part[f"{metric}_mean"] - part[f"{metric}_low"])))
    if "is_default" in rows:
        marked = rows[rows["is_default"].astype(bool)]
        add_default_marks(fig, marked[f"{metric}_mean"], marked["configuration"], marked["hover"])
    labels = rows.drop_duplicates("position")["configuration"].tolist()
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels[::-1], automargin=True)
    fig.update_layout(scattermode="group")
    fig.update_xaxes(title=f"{metric.replace('_', ' ')} (mean over seeds)")
    if metric.endswith("accuracy"):
        fig.update_xaxes(range=[max(0.0, float(rows[f"{metric}_low"].fillna(rows[f"{metric}_mean"]).min()) - 0.02),
                                min(1.0, float(rows[f"{metric}_high"].fillna(rows[f"{metric}_mean"]).max()) + 0.02)
                                + 0.03])  # room for the n labels
    confidence = f"{result.confidence:.0%}"
    return finish(fig, regime_title(f"{metric.replace('_', ' ').capitalize()} over seeds per configuration: mean "
                                    f"and {confidence} interval (3+ seeds; 2 seeds: their range; 1: the mean)",
                                    regimes), 160 + 34 * len(labels))
