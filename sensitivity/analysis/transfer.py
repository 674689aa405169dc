"""Transfer of defaults (Liu et al. 2018): every source default run on every target framework and dataset,
judged against the target's own default on the same dataset.

`transfer_matrix` gives one row per (default, target framework, target dataset) with the mean accuracy and
train time over seeds, n, and both relative to the target's own default (ratio; 1 is as good as its own).
`plot_transfer` draws Liu et al.'s two findings as heatmaps: across datasets within a framework (its own
default tuned for one dataset, run on each), and across frameworks on one dataset (each framework's
default run on every other).
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.table import NotEnoughData, trained, trials_table


def transfer_matrix(table) -> pd.DataFrame:
    table = trials_table(table)
    if "default" not in table or table["default"].isna().all():
        raise NotEnoughData("transfer needs the trials of sensitivity transfer (or sensitivity defaults)")
    runs = trained(table)
    runs = runs[runs["default"].notna()]
    if runs.empty:
        raise NotEnoughData("transfer needs completed trials of framework defaults")
    keys = ["default", "default_source", "source_dataset", "framework", "dataset"]
    cells = (runs.groupby(keys, dropna=False)
             .agg(accuracy=("accuracy", "mean"), train_time_s=("train_time_s", "mean"), n_seeds=("accuracy", "size"),
                  own=("own_default", "max"), diverged=("outcome", lambda o: int((o == "diverged").sum())))
             .reset_index())
    own = cells[cells["own"].eq(True)][["framework", "dataset", "default", "accuracy", "train_time_s"]]
    own = own.rename(columns={"default": "own_default", "accuracy": "own_accuracy", "train_time_s": "own_time_s"})
    cells = cells.merge(own, on=["framework", "dataset"], how="left")
    cells["relative_accuracy"] = cells["accuracy"] / cells["own_accuracy"]
    cells["relative_time"] = cells["train_time_s"] / cells["own_time_s"]
    return cells.rename(columns={"framework": "target_framework", "dataset": "target_dataset",
                                 "default_source": "source_framework"}).drop(columns="own")


def plot_transfer(cells: pd.DataFrame):
    """Two heatmaps: accuracy of each framework's own defaults across datasets; accuracy relative to the
    target's own default across frameworks, one panel per dataset. Each cell's text gives n seeds."""
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    datasets = sorted(cells["target_dataset"].unique())
    own_rows = cells[cells["source_framework"].eq(cells["target_framework"]) | cells["source_framework"].isin(
        ["caffe", "dlbench"])]
    within = own_rows.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="accuracy")
    within_n = own_rows.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="n_seeds")
    fig = make_subplots(rows=1 + len(datasets), cols=1, vertical_spacing=0.08, subplot_titles=(
        ["Across datasets within a framework: accuracy of its defaults"]
        + [f"Across frameworks on {d}: accuracy relative to the target's own default" for d in datasets]))
    fig.add_trace(go.Heatmap(z=within.values, x=list(within.columns), y=[f"{f}: {d}" for f, d in within.index],
                             text=_cell_text(within, within_n), texttemplate="%{text}", colorscale="Viridis",
                             zmin=0, zmax=1, colorbar=dict(title="accuracy", y=0.85, len=0.3)), row=1, col=1)
    for i, dataset in enumerate(datasets, start=2):
        part = cells[cells["target_dataset"].eq(dataset)]
        across = part.pivot_table(index="default", columns="target_framework", values="relative_accuracy")
        n = part.pivot_table(index="default", columns="target_framework", values="n_seeds")
        fig.add_trace(go.Heatmap(z=across.values, x=list(across.columns), y=list(across.index),
                                 text=_cell_text(across, n), texttemplate="%{text}", colorscale="RdBu", zmin=0,
                                 zmax=2, showscale=i == 2, colorbar=dict(title="relative to own", y=0.35, len=0.3)),
                      row=i, col=1)
    fig.update_layout(height=360 * (1 + len(datasets)), title="Transfer of default configurations")
    return fig


def _cell_text(values: pd.DataFrame, counts: pd.DataFrame):
    counts = counts.reindex_like(values)
    return [[("" if pd.isna(v) else f"{v:.2f} (n={int(c)})") for v, c in zip(row_v, row_c)]
            for row_v, row_c in zip(values.values, counts.values)]
