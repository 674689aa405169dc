"""Robustness: accuracy against eps under the strongest attack, white-box and relative to clean accuracy, and the
matrix of transferred examples (`tables.robustness.robustness_curves`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.style import (colours, dash, finish, go, make_subplots, regime_title, series_name,
                                                symbol)
from sensitivity.analysis.intervals import CONFIDENCE
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.robustness import robustness_curves

TITLE = "Robustness"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per regime, dataset, default, role, attack, kind (white-box or transfer), source and target
      framework and eps (L-infinity, in the data's [0, 1] range): accuracy_mean, _low, _high, _method, n (models),
      clean_mean (their clean accuracy), relative_mean, _low, _high (accuracy / clean accuracy), samples (test
      samples a model)
    """
    rows: pd.DataFrame


def compute(table, confidence: float = CONFIDENCE) -> Info:
    return Info(robustness_curves(table, confidence))


def plot(result: Info):
    """One row per dataset, configuration (default) and regime, under the strongest attack (PGD where it ran):
    the states the verdict compares (each configuration's models at matched clean accuracy where they have
    checkpoints, else as trained; never several defaults pooled). White-box accuracy against eps per framework
    (mean and interval, n and clean accuracy in the legend), the same relative to each model's clean accuracy,
    and at the largest eps the accuracy of each framework's models (column) on the examples made on the seed's
    surrogate (row) beside the white-box diagonal."""
    curves = result.rows
    regimes = regimes_of(curves)
    attack = "pgd" if curves["attack"].eq("pgd").any() else curves["attack"].iloc[0]
    curves = curves[curves["attack"].eq(attack)]
    curves = curves.assign(default=curves["default"].astype(object).where(curves["default"].notna(), "all models"))
    panels = sorted({(d, c, r) for d, c, r in zip(curves["dataset"], curves["default"], curves[REGIME])},
                    key=lambda p: (p[0], p[1], regimes.index(p[2])))
    top = curves["eps"].max()
    roles = dict(zip(zip(curves["dataset"], curves["default"], curves[REGIME]), curves["role"]))
    titles = [t for d, c, r in panels for t in (f"{d}, {c} ({roles[d, c, r]}), {attack.upper()}, {r}: white-box",
                                                 "relative to the model's clean accuracy",
                                                 f"made on the row's model, tested on the column's, eps {top:g}")]
    fig = make_subplots(rows=len(panels), cols=3, subplot_titles=titles, column_widths=[0.36, 0.36, 0.28],
                        horizontal_spacing=0.09, vertical_spacing=0.35 / max(1, len(panels)))
    palette, shown = colours(curves["target_framework"]), set()
    for row, (dataset, default, regime) in enumerate(panels, start=1):
        part = curves[curves["dataset"].eq(dataset) & curves["default"].eq(default) & curves[REGIME].eq(regime)]
        white = part[part["kind"].eq("white-box")]
        _curves(fig, white, "accuracy", palette=palette, shown=shown, row=row, col=1, regimes=regimes)
        _curves(fig, white, "relative", palette=palette, shown=shown, row=row, col=2, regimes=regimes)
        _matrix(fig, part, row, 3)
        fig.update_xaxes(title="eps", row=row, col=1)
        fig.update_xaxes(title="eps", row=row, col=2)
        fig.update_yaxes(title="accuracy", range=[0, 1.02], row=row, col=1)
        fig.update_yaxes(title="accuracy / clean accuracy", rangemode="tozero", row=row, col=2)
        fig.update_xaxes(title="tested on", type="category", row=row, col=3)
        fig.update_yaxes(title="made on", type="category", automargin=True, row=row, col=3)
    samples = int(curves["samples"].min())
    fig = finish(fig, regime_title(f"Robustness to adversarial examples ({samples} test samples per model; the "
                                   "states the verdict compares)", regimes), 360 * len(panels) + 160)
    return fig.update_layout(legend=dict(orientation="h", y=-0.08 / max(1, len(panels)) - 0.04))


def _curves(fig, rows: pd.DataFrame, value: str, *, palette: dict, shown: set, row: int, col: int,
            regimes: list) -> None:
    for (framework, regime), line in rows.groupby(["target_framework", REGIME]):
        line = line.sort_values("eps")
        n = int(line["n"].min())
        name = series_name(framework, regime, regimes)
        mean = line[f"{value}_mean"]
        label = f"{name} (n={n} model{'s' if n != 1 else ''})"
        fig.add_trace(go.Scatter(x=line["eps"], y=mean, mode="lines+markers", name=label, legendgroup=name,
                                 showlegend=name not in shown, line=dict(color=palette[framework], dash=dash(regime)),
                                 marker=dict(symbol=symbol(regime)),
                                 error_y=dict(type="data", symmetric=False, visible=True,
                                              array=(line[f"{value}_high"] - mean).fillna(0),
                                              arrayminus=(mean - line[f"{value}_low"]).fillna(0)),
                                 hovertext=[f"{name} eps {e:g}: {m:.3f} {value} (n={k}; clean accuracy {c:.3f})"
                                            for e, m, k, c in zip(line["eps"], mean, line["n"], line["clean_mean"])],
                                 hoverinfo="text"), row=row, col=col)
        shown.add(name)


def _matrix(fig, rows: pd.DataFrame, row: int, col: int) -> None:
    at = rows[rows["eps"].eq(rows["eps"].max())]
    cross = at[at["kind"].eq("transfer") & at["source_framework"].ne(at["target_framework"])]
    own = at[at["kind"].eq("white-box")]  # the diagonal: each framework's models under their own attack
    cells = pd.concat([cross, own])
    values = cells.pivot_table(index="source_framework", columns="target_framework", values="accuracy_mean")
    counts = cells.pivot_table(index="source_framework", columns="target_framework", values="n").reindex_like(values)
    text = [["" if pd.isna(v) else f"{v:.2f} (n={int(c)})" for v, c in zip(vr, cr)]
            for vr, cr in zip(values.values, counts.values)]
    fig.add_trace(go.Heatmap(z=values.values, x=list(values.columns), y=list(values.index), text=text,
                             texttemplate="%{text}", colorscale="Viridis", zmin=0, zmax=1, showscale=False),
                  row=row, col=col)
