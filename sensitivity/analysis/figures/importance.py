"""Hyper-parameter importance: fANOVA and PED-ANOVA per block (regime), each with its bootstrap interval
(`rankings.importance.parameter_importance`, whose `Importance` is this figure's data)."""
from __future__ import annotations

import numpy as np

from sensitivity.analysis.figures.style import (colours, finish, go,
                                                make_subplots, regime_title)
from sensitivity.analysis.rankings.importance import ALL as ALL_TRIALS
from sensitivity.analysis.rankings.importance import EVALUATORS, LABELS, RESAMPLES, Importance, parameter_importance
from sensitivity.analysis.table import REGIME

TITLE = "Hyper-parameter importance"  # the heading of its report section

Info = Importance


def compute(table, evaluators=EVALUATORS, seed: int = 0, resamples: int = RESAMPLES) -> Importance:
    return parameter_importance(table, evaluators, seed, resamples)


def plot(result: Importance):
    """One panel per block (each regime, then "all" where the regime is a parameter): horizontal bars per
    evaluator with their bootstrap intervals; parameter names on the axis (never on the bars), the framework
    defaults' values in the hover text."""
    importance = result.rows
    blocks = list(dict.fromkeys(importance[REGIME]))
    sizes = importance.groupby(REGIME)["n_trials"].max()
    rho = {record[REGIME]: record["spearman"] for record in result.agreement.to_dict("records")}

    def title(block):
        name = "all trials, the regime a parameter" if block == ALL_TRIALS else block
        agree = rho.get(block)
        return f"{name} (n={sizes[block]} sampled trials" + (
            f"; Spearman {agree:.2f})" if agree is not None and agree == agree else ")")
    fig = make_subplots(rows=1, cols=len(blocks), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[title(b) for b in blocks])
    first = importance[importance[REGIME].eq(blocks[0])].sort_values(["evaluator", "rank"])
    order = list(dict.fromkeys([*first["parameter"], *importance.sort_values("rank")["parameter"]]))
    palette = colours(importance["evaluator"])
    for col, block in enumerate(blocks, start=1):
        part = importance[importance[REGIME].eq(block)]
        for evaluator, rows in part.groupby("evaluator", sort=False):
            rows = rows.set_index("parameter").reindex(order[::-1]).dropna(subset=["importance"])
            defaults = np.where((rows["defaults"] != "") & (rows.index != "framework"),
                                "<br>framework defaults: " + rows["defaults"].astype(str), "")
            fig.add_trace(go.Bar(
                y=rows.index, x=rows["importance"], orientation="h", name=LABELS[evaluator], legendgroup=evaluator,
                showlegend=col == 1, marker=dict(color=palette[evaluator]),
                error_x=dict(type="data", symmetric=False, array=(rows["high"] - rows["importance"]).fillna(0),
                             arrayminus=(rows["importance"] - rows["low"]).fillna(0), color="#444", thickness=1.2),
                hovertext=[f"{block}, {LABELS[evaluator]} {p}: {v:.3f} [{lo:.3f}, {hi:.3f}] (rank {r}, n={n} "
                           f"sampled trials){d}" for p, v, lo, hi, r, n, d in
                           zip(rows.index, rows["importance"], rows["low"], rows["high"], rows["rank"],
                               rows["n_trials"], defaults)], hoverinfo="text"), row=1, col=col)
    fig.update_layout(barmode="group", legend=dict(traceorder="reversed"))
    fig.update_xaxes(title="importance (sums to 1 per evaluator)", range=[0, 1.05])
    fig.update_yaxes(automargin=True, ticksuffix=" ")
    title = regime_title("Hyper-parameter importance for accuracy, sampled trials only: 95% bootstrap intervals",
                         [b for b in blocks if b != ALL_TRIALS])
    return finish(fig, title, 260 + 46 * len(order))
