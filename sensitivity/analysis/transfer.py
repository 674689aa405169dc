"""Transfer of defaults (Liu et al. 2018): every source default run on every target framework and dataset,
judged against the target's own default on the same dataset.

`transfer_matrix` gives one row per (default, target framework, target dataset, regime) with the mean
accuracy and train time over seeds, n, and both relative to the target's own default in the same regime
(ratio; 1 is as good as its own): a default run natively on framework B is judged against B's own default
run natively, never against a canonical run. `plot_transfer` draws Liu et al.'s two findings as heatmaps:
across datasets within a framework (its own default tuned for one dataset, run on each), and across
frameworks on one dataset (each framework's default run on every other); one column of heatmaps per
regime, native first.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.table import REGIME, NotEnoughData, regime_sorted, regimes_of, trained, trials_table

KEYS = ["default", "default_source", "source_dataset", "framework", "dataset", REGIME]


def transfer_matrix(table) -> pd.DataFrame:
    table = trials_table(table)
    if "default" not in table or table["default"].isna().all():
        raise NotEnoughData("transfer needs the trials of sensitivity transfer (or sensitivity defaults)")
    runs = trained(table)
    runs = runs[runs["default"].notna()]
    if runs.empty:
        raise NotEnoughData("transfer needs completed trials of framework defaults")
    cells = (runs.groupby(KEYS, dropna=False)
             .agg(accuracy=("accuracy", "mean"), train_time_s=("train_time_s", "mean"), n_seeds=("accuracy", "size"),
                  own=("own_default", "max"), diverged=("outcome", lambda o: int((o == "diverged").sum())))
             .reset_index())
    target = ["framework", "dataset", REGIME]  # the target's own default in the same regime
    own = cells[cells["own"].eq(True)][target + ["default", "accuracy", "train_time_s"]]
    own = own.rename(columns={"default": "own_default", "accuracy": "own_accuracy", "train_time_s": "own_time_s"})
    cells = cells.merge(own, on=target, how="left")
    cells["relative_accuracy"] = cells["accuracy"] / cells["own_accuracy"]
    cells["relative_time"] = cells["train_time_s"] / cells["own_time_s"]
    cells = cells.rename(columns={"framework": "target_framework", "dataset": "target_dataset",
                                  "default_source": "source_framework"}).drop(columns="own")
    return regime_sorted(cells, [REGIME, "default", "target_framework", "target_dataset"])


def plot_transfer(cells: pd.DataFrame):
    """Per regime (a column, native first), two kinds of heatmap: accuracy of each framework's own defaults
    across datasets; accuracy relative to the target's own default across frameworks, one panel per
    dataset. Each cell's text gives n seeds."""
    from plotly.subplots import make_subplots

    regimes = regimes_of(cells)
    datasets = sorted(cells["target_dataset"].unique())
    titles = [title for kind in ["within"] + datasets for regime in regimes for title in [
        f"Across datasets within a framework ({regime}):<br>accuracy of its defaults" if kind == "within" else
        f"Across frameworks on {kind} ({regime}):<br>accuracy relative to the target's own default"]]
    fig = make_subplots(rows=1 + len(datasets), cols=len(regimes), vertical_spacing=0.12,
                        horizontal_spacing=0.15, subplot_titles=titles)
    for col, regime in enumerate(regimes, start=1):
        part = cells[cells[REGIME].eq(regime)]
        fig.add_trace(_within(part, first=col == 1), row=1, col=col)
        for row, dataset in enumerate(datasets, start=2):
            fig.add_trace(_across(part[part["target_dataset"].eq(dataset)], first=(row, col) == (2, 1)),
                          row=row, col=col)
    fig.update_layout(height=360 * (1 + len(datasets)), width=max(700, 560 * len(regimes)),
                      title=f"Transfer of default configurations ({', '.join(regimes)}, kept apart)"
                      if len(regimes) > 1 else f"Transfer of default configurations (regime: {regimes[0]})")
    return fig


def _within(cells: pd.DataFrame, first: bool):
    """Heatmap: each framework's own defaults (and Caffe's, DLBench's) on each dataset."""
    import plotly.graph_objects as go

    own = cells[cells["source_framework"].eq(cells["target_framework"])
                | cells["source_framework"].isin(["caffe", "dlbench"])]
    values = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="accuracy")
    counts = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=[f"{f}: {d}" for f, d in values.index],
                      text=_cell_text(values, counts), texttemplate="%{text}", colorscale="Viridis", zmin=0, zmax=1,
                      showscale=first, colorbar=dict(title="accuracy", y=0.85, len=0.3))


def _across(cells: pd.DataFrame, first: bool):
    """Heatmap: each default (row) on each target framework (column), relative to the target's own."""
    import plotly.graph_objects as go

    values = cells.pivot_table(index="default", columns="target_framework", values="relative_accuracy")
    counts = cells.pivot_table(index="default", columns="target_framework", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=list(values.index), text=_cell_text(values, counts),
                      texttemplate="%{text}", colorscale="RdBu", zmin=0, zmax=2, showscale=first,
                      colorbar=dict(title="relative to own", y=0.35, len=0.3))


def _cell_text(values: pd.DataFrame, counts: pd.DataFrame):
    counts = counts.reindex_like(values)
    return [[("" if pd.isna(v) else f"{v:.2f} (n={int(c)})") for v, c in zip(row_v, row_c)]
            for row_v, row_c in zip(values.values, counts.values)]
