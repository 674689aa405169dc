"""The runtime-accuracy frontier: each framework's and regime's trials by train time and accuracy, the frontier of
each, and the overall frontier per regime (`tables.frontier`: its points and hypervolumes are `Frontier`)."""
from __future__ import annotations

from sensitivity.analysis.figures.layout import drawn, regime_series
from sensitivity.analysis.figures.style import (add_default_marks, colours, dash, finish, framework_label, go,
                                                regime_title, series_name, symbol)
from sensitivity.analysis.table import REGIME, regimes_of
from sensitivity.analysis.tables.frontier import ALL, Frontier, runtime_accuracy_frontier

TITLE = "Runtime-accuracy frontier"  # the heading of its report section

Info = Frontier
compute = runtime_accuracy_frontier


def plot(frontier: Frontier):
    """Every trial by train time and accuracy, each framework's frontier, and the overall frontier per regime."""
    points, summary = frontier.points, frontier.summary.set_index(["scope", REGIME])
    regimes = regimes_of(points)
    palette, fig = colours(points["framework"]), go.Figure()
    hover = ("#" + points["number"].astype(str) + " " + points["framework"] + " (" + points[REGIME] + ") seed "
             + points["seed"].astype(str) + " (" + points["outcome"] + ")<br>accuracy "
             + points["accuracy"].round(4).astype(str) + ", train " + points["train_time_s"].round(2).astype(str)
             + " s")
    ok = regime_series(points[points["outcome"] == "ok"])
    for framework, regime, rows in ok:  # every cloud first, so that no cloud hides a frontier
        s, name = summary.loc[(framework, regime)], series_name(framework, regime, regimes)
        cloud, note = drawn(rows, keep=rows["on_framework_frontier"] | rows["on_frontier"])
        fig.add_trace(go.Scattergl(x=cloud["train_time_s"], y=cloud["accuracy"], mode="markers", legendgroup=name,
                                   name=framework_label(name, s["n_trials"], s["n_seeds"])
                                   + f", hypervolume {s['hypervolume']:.3g}{note}",
                                   marker=dict(color=palette[framework], size=6, opacity=0.45, symbol=symbol(regime)),
                                   hovertext=hover[cloud.index], hoverinfo="text"))
    for framework, regime, rows in ok:
        front, name = rows[rows["on_framework_frontier"]], series_name(framework, regime, regimes)
        fig.add_trace(go.Scatter(x=front["train_time_s"], y=front["accuracy"], mode="lines+markers",
                                 line=dict(color=palette[framework], shape="hv", dash=dash(regime)),
                                 marker=dict(symbol=symbol(regime)), legendgroup=name, name=f"{name} frontier",
                                 hovertext=hover[front.index], hoverinfo="text"))
    for regime in regimes:
        front = points[points["on_frontier"] & points[REGIME].eq(regime)].sort_values("train_time_s")
        fig.add_trace(go.Scatter(x=front["train_time_s"], y=front["accuracy"], mode="lines",
                                 line=dict(color="black", width=2, dash="dot" if regime == "native" else "dashdot",
                                           shape="hv"),
                                 name=f"overall frontier{'' if len(regimes) < 2 else ', ' + regime} (hypervolume "
                                      f"{summary.loc[(ALL, regime), 'hypervolume']:.3g})"))
    for outcome, mark in (("collapsed", "circle-open"), ("diverged", "x")):  # runs that did not train
        untrained = points[points["outcome"] == outcome]
        if len(untrained):
            shown, note = drawn(untrained)
            fig.add_trace(go.Scattergl(x=shown["train_time_s"], y=shown["accuracy"], mode="markers",
                                       name=f"{outcome} (n={len(untrained)}, never on a frontier{note})",
                                       marker=dict(symbol=mark, color="grey", size=6), hovertext=hover[shown.index],
                                       hoverinfo="text"))
    defaults = points[points["is_default"]]
    add_default_marks(fig, defaults["train_time_s"], defaults["accuracy"], hover[defaults.index])
    fig.update_xaxes(title="train time (s)")
    fig.update_yaxes(title="accuracy")
    return finish(fig, regime_title("Runtime-accuracy frontier, one per regime (pruned and failed trials excluded)",
                                    regimes), 560)
