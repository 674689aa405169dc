"""Dataset crossovers: on one framework, each dataset's tuned configuration on both datasets, mean test accuracy with
its 95% interval; lines that cross are a home advantage (`tables.crossover.crossover_comparisons`). One panel per
crossover of a study of `sensitivity crossover` (the placebo's among them)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.style import finish, go, make_subplots
from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.table import REGIME, NotEnoughData, trained, trials_table
from sensitivity.analysis.tables.arms import runs_of
from sensitivity.analysis.tables.crossover import NEEDS, crossover_comparisons

TITLE = "Dataset crossovers"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - crossovers: one row per crossover (`crossover_comparisons`): framework, semantics, dataset_a, dataset_b,
      config_a, config_b (the configurations tuned for each), placebo, model, the home advantage and its interval
    - points: one row per crossover (`panel`: its row in crossovers), configuration (tuned_for) and dataset it ran
      on (on): mean test accuracy over converged runs (chance where all diverged), low and high (its 95% interval),
      n (runs)
    """
    crossovers: pd.DataFrame
    points: pd.DataFrame


def compute(table) -> Info:
    table = trials_table(table)
    return info_of(table, crossover_comparisons(table))


def info_of(table, crossovers: pd.DataFrame) -> Info:
    """The figure's data from a trial table and its crossovers (`crossover_comparisons`), already computed."""
    rows = trained(table)
    rows = rows[rows["crossover"].notna()] if "crossover" in rows else rows.iloc[0:0]
    if crossovers.empty or rows.empty:
        raise NotEnoughData(NEEDS)
    points = []
    for panel, row in enumerate(crossovers.to_dict("records")):
        part = rows[rows["crossover"].eq(row["crossover"]) & rows[REGIME].eq(row[REGIME])]
        for tuned in (row["dataset_a"], row["dataset_b"]):
            for on in (row["dataset_a"], row["dataset_b"]):
                interval = mean_interval(runs_of(part[part["tuned_for"].eq(tuned) & part["dataset"].eq(on)], on)
                                         .arm.accuracy)
                points.append({"panel": panel, "tuned_for": tuned, "on": on,
                               "mean": interval.mean, "low": interval.low, "high": interval.high, "n": interval.n})
    return Info(crossovers, pd.DataFrame(points))


def plot(info: Info):
    """Per crossover (a panel): each tuned configuration's mean test accuracy (95% interval) on the two datasets;
    lines that cross are a home advantage."""
    crossovers, points = info.crossovers, info.points
    titles = [f"{'placebo: ' if r['placebo'] else ''}{r['framework']}, {r[REGIME]}: {r['dataset_a']} x {r['dataset_b']}"
              + (f" ({r['model']})" if r.get("model") else "")
              for r in crossovers.to_dict("records")]
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=0.12)
    for col, row in enumerate(crossovers.to_dict("records"), start=1):
        part = points[points["panel"].eq(col - 1)]
        datasets = [row["dataset_a"], row["dataset_b"]]
        for tuned, colour in zip(datasets, ("#1f77b4", "#d62728")):
            line = part[part["tuned_for"].eq(tuned)].set_index("on").loc[datasets]
            means = line["mean"].tolist()
            lows = [m - (lo if lo is not None and lo == lo else m) for m, lo in zip(means, line["low"])]
            highs = [(hi if hi is not None and hi == hi else m) - m for m, hi in zip(means, line["high"])]
            label = row["config_a"] if tuned == row["dataset_a"] else row["config_b"]
            fig.add_trace(go.Scatter(x=datasets, y=means, mode="lines+markers", name=f"tuned for {tuned}",
                                     legendgroup=tuned, showlegend=col == 1, line=dict(color=colour),
                                     error_y=dict(type="data", symmetric=False, array=highs, arrayminus=lows),
                                     hovertext=[f"tuned for {tuned} ({label}) on {on}" for on in datasets],
                                     hoverinfo="text+y"), row=1, col=col)
    fig.update_yaxes(title_text="test accuracy (converged runs; chance where all diverged)", col=1)
    fig = finish(fig, "Dataset crossover: each dataset's tuned configuration on both datasets", 460)
    return fig.update_layout(width=max(640, 420 * len(titles)))
