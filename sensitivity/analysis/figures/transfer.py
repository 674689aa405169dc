"""Transfer of defaults: each framework's defaults across datasets, and each default across frameworks relative to
the target's own (`tables.transfer.transfer_matrix`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.style import go, make_subplots
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.transfer import budget_note, transfer_matrix

TITLE = "Transfer of defaults"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per default, target framework, target dataset and regime: accuracy (mean test accuracy over
      converged runs, 0-1), its interval, train_time_s, n_seeds, diverged, budget_scale, own_accuracy (the target's
      own default), relative_accuracy and relative_time (to it), source_framework (the default's home)
    - budget: " (budget cut: each default ran 0.04 to 0.5 of its published epochs)" where cut; else
    """""
    rows: pd.DataFrame
    budget: str

    @classmethod
    def of(cls, cells: pd.DataFrame) -> "Info":
        """The result of a frame of `transfer_matrix`."""
        return cls(cells, budget_note(cells["budget_scale"]) if "budget_scale" in cells else "")


def compute(table) -> Info:
    return Info.of(transfer_matrix(table))


def plot(result: Info):
    """Per regime (a column, native first), two kinds of heatmap: accuracy of each framework's own defaults
    across datasets; accuracy relative to the target's own default across frameworks, one panel per
    dataset. Each cell's text gives n seeds; the titles name the budget scale where it is below 1."""

    cells, budget = result.rows, result.budget
    regimes = regimes_of(cells)
    datasets = sorted(cells["target_dataset"].unique())
    short = " (cut budget)" if budget else ""
    titles = [title for kind in ["within"] + datasets for regime in regimes for title in [
        f"Across datasets within a framework ({regime}){short}:<br>accuracy of its defaults" if kind == "within" else
        f"Across frameworks on {kind} ({regime}){short}:<br>accuracy relative to the target's own default"]]
    fig = make_subplots(rows=1 + len(datasets), cols=len(regimes), vertical_spacing=0.12 / max(1, len(datasets)) + 0.06,
                        horizontal_spacing=0.15, subplot_titles=titles)
    for col, regime in enumerate(regimes, start=1):
        part = cells[cells[REGIME].eq(regime)]
        fig.add_trace(_within(part, first=col == 1), row=1, col=col)
        for row, dataset in enumerate(datasets, start=2):
            fig.add_trace(_across(part[part["target_dataset"].eq(dataset)], first=(row, col) == (2, 1)),
                          row=row, col=col)
    fig.update_yaxes(automargin=True)
    title = (f"Transfer of default configurations ({', '.join(regimes)}, kept apart)" if len(regimes) > 1
             else f"Transfer of default configurations (regime: {regimes[0]})")
    fig.update_layout(height=380 * (1 + len(datasets)) + 80, width=max(760, 600 * len(regimes)),
                      title=dict(text=title + ("<br><sub>" + budget.strip(" ()") + "</sub>" if budget else ""),
                                 y=1, yref="container", yanchor="top", pad=dict(t=12)),
                      margin=dict(t=150 if budget else 110))
    return fig


def _within(cells: pd.DataFrame, first: bool):
    """Heatmap: each framework's own defaults (and Caffe's, DLBench's) on each dataset."""

    own = cells[cells["source_framework"].eq(cells["target_framework"])
                | cells["source_framework"].isin(["caffe", "dlbench"])]
    values = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="accuracy")
    counts = own.pivot_table(index=["target_framework", "default"], columns="target_dataset", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=[f"{f}: {d}" for f, d in values.index],
                      text=_cell_text(values, counts), texttemplate="%{text}", colorscale="Viridis", zmin=0, zmax=1,
                      showscale=first, colorbar=dict(title="accuracy", y=0.85, len=0.3))


def _across(cells: pd.DataFrame, first: bool):
    """Heatmap: each default (row) on each target framework (column), relative to the target's own."""

    values = cells.pivot_table(index="default", columns="target_framework", values="relative_accuracy")
    counts = cells.pivot_table(index="default", columns="target_framework", values="n_seeds")
    return go.Heatmap(z=values.values, x=list(values.columns), y=list(values.index), text=_cell_text(values, counts),
                      texttemplate="%{text}", colorscale="RdBu", zmin=0, zmax=2, showscale=first,
                      colorbar=dict(title="relative to own", y=0.35, len=0.3))


def _cell_text(values: pd.DataFrame, counts: pd.DataFrame):
    counts = counts.reindex_like(values)
    return [[("" if pd.isna(v) else f"{v:.2f} (n={int(c)})") for v, c in zip(row_v, row_c)]
            for row_v, row_c in zip(values.values, counts.values)]
