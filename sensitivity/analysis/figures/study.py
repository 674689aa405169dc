"""The figures of one study: one thin `plot_<kind>` per kind, drawing what its compute function returned.

Every figure keeps the regimes (`semantics`) apart: one trace per framework and regime (the framework's
colour; the regime's dash and marker), the regime in the legend where a figure holds both and in the title
always.

A scattered cloud draws at most POINTS_MAX points per trace, and learning curves at most CURVES_MAX curves per
trace: beyond that a random subsample (seeded), said in the trace's name ("drawn: 3,000 of 40,000"). Every
number the figure states (counts, frontiers, medians, hypervolumes) is computed from all the trials; a page of
100,000 points per trace would not open.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.figures.results import (Contour, Curves, Divergence, Importance, Isolation, Resources, Seeds,
                                                 Slice)
from sensitivity.analysis.tables.frontier import ALL, Frontier
from sensitivity.analysis.intervals import interval_text
from sensitivity.analysis.rankings.importance import ALL as ALL_TRIALS
from sensitivity.analysis.rankings.importance import LABELS
from sensitivity.analysis.tables.resources import DEFAULTS
from sensitivity.analysis.tables.seeds import framework_comparisons
from sensitivity.analysis.figures.style import (add_default_marks, colours, dash, finish, framework_label, go, make_subplots,
                                        regime_title, series_name, symbol)
from sensitivity.analysis.tables.parameter_values import format_value, numeric_sort_key
from sensitivity.analysis.table import REGIME, regime_position, regimes_of


POINTS_MAX, CURVES_MAX = 3_000, 300


def drawn(rows: pd.DataFrame, limit=None, keep=None, seed: int = 0) -> tuple:
    """(the rows a trace draws, a note for its name): all of them up to `limit` (POINTS_MAX), else a seeded
    random subsample of `limit`, always with the rows of `keep` (a mask: a frontier's points)."""
    limit = POINTS_MAX if limit is None else limit
    if len(rows) <= limit:
        return rows, ""
    kept = rows[keep] if keep is not None else rows.iloc[:0]
    rest = rows.drop(kept.index)
    chosen = pd.concat([kept, rest.sample(max(0, limit - len(kept)), random_state=seed)]).sort_index()
    return chosen, f"; drawn: {len(chosen):,} of {len(rows):,}"


def _grid(titles, cols: int = 3, height_per_row: int = 320):
    rows = max(1, math.ceil(len(titles) / cols))
    fig = make_subplots(rows=rows, cols=min(cols, len(titles)), subplot_titles=list(titles),
                        horizontal_spacing=0.08, vertical_spacing=0.5 / rows)
    return fig, [(i // cols + 1, i % cols + 1) for i in range(len(titles))], rows * height_per_row + 120


def _ordered_axis(fig, labels, row, col) -> None:
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(labels), row=row, col=col)


def _series(rows: pd.DataFrame, framework: str = "framework"):
    """(framework, regime, rows) for each framework and regime in `rows`, native first."""
    groups = rows.groupby([framework, REGIME], sort=True)
    return [(fw, regime, part) for (fw, regime), part in
            sorted(groups, key=lambda group: (regime_position(group[0][1]), group[0][0]))]


def plot_frontier(frontier: Frontier):
    points, summary = frontier.points, frontier.summary.set_index(["scope", REGIME])
    regimes = regimes_of(points)
    palette, fig = colours(points["framework"]), go.Figure()
    hover = ("#" + points["number"].astype(str) + " " + points["framework"] + " (" + points[REGIME] + ") seed "
             + points["seed"].astype(str) + " (" + points["outcome"] + ")<br>accuracy "
             + points["accuracy"].round(4).astype(str) + ", train " + points["train_time_s"].round(2).astype(str)
             + " s")
    ok = _series(points[points["outcome"] == "ok"])
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
    diverged, n_diverged = points[points["outcome"] == "diverged"], (points["outcome"] == "diverged").sum()
    if len(diverged):
        diverged, note = drawn(diverged)
        fig.add_trace(go.Scattergl(x=diverged["train_time_s"], y=diverged["accuracy"], mode="markers",
                                   name=f"diverged (n={n_diverged}, never on a frontier{note})",
                                   marker=dict(symbol="x", color="grey", size=6), hovertext=hover[diverged.index],
                                   hoverinfo="text"))
    defaults = points[points["is_default"]]
    add_default_marks(fig, defaults["train_time_s"], defaults["accuracy"], hover[defaults.index])
    fig.update_xaxes(title="train time (s)")
    fig.update_yaxes(title="accuracy")
    return finish(fig, regime_title("Runtime-accuracy frontier, one per regime (pruned and failed trials excluded)",
                                    regimes), 560)


def plot_importance(result: Importance):
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


def _per_parameter(data: pd.DataFrame, y: str, hover, title: str, y_title: str, marks, legend):
    """Subplots per parameter, one line per framework and regime over the parameter's ordered values or
    bins; `marks(rows)` gives (mask, y) of the points to star as framework defaults, `legend(name, line)`
    the line's legend entry with its n."""
    names = list(dict.fromkeys(data["parameter"]))
    fig, positions, height = _grid(names)
    palette, regimes = colours(data["framework"]), regimes_of(data)
    hovers = hover(data)  # made once for all lines: a string operation per line cost more than the figure
    for name, (row, col) in zip(names, positions):
        rows = data[data["parameter"] == name].sort_values("order")
        _ordered_axis(fig, rows.drop_duplicates("order")["value"], row, col)
        for framework, regime, line in _series(rows):
            series = series_name(framework, regime, regimes)
            fig.add_trace(go.Scatter(x=line["value"], y=line[y], mode="lines+markers", name=legend(series, line),
                                     legendgroup=series, showlegend=(row, col) == (1, 1),
                                     line=dict(color=palette[framework], dash=dash(regime)),
                                     marker=dict(color=palette[framework], symbol=symbol(regime)),
                                     hovertext=hovers[line.index].to_numpy(dtype=str), hoverinfo="text"),
                          row=row, col=col)
        fig.update_xaxes(tickangle=-30, automargin=True, tickfont=dict(size=10), row=row, col=col)
        mask, marked_y = marks(rows)
        add_default_marks(fig, rows["value"][mask], marked_y[mask], rows["framework"][mask] + " (" +
                          rows[REGIME][mask] + ") default", row, col)
        fig.update_yaxes(title=y_title if col == 1 else None, row=row, col=col)
    return finish(fig, regime_title(title, regimes), height)


def plot_isolation(result: Isolation):
    data = result.rows

    def hover(rows):
        return (rows["framework"] + " (" + rows[REGIME] + ") " + rows["parameter"] + " " + rows["value"]
                + ": best accuracy " + rows["best_accuracy"].round(4).astype(str) + " (n="
                + rows["n_seeds"].astype(str) + " seeds; best of " + rows["n_configs"].astype(str)
                + " configurations)<br>nuisance: " + rows["nuisance"])
    return _per_parameter(data, "best_accuracy", hover, "Isolation: best accuracy over the nuisance parameters "
                          "(mean over seeds)", "best accuracy",
                          marks=lambda rows: (rows["default_accuracy"].notna(), rows["default_accuracy"]),
                          legend=lambda name, line: framework_label(name, line["n_configs"].sum(),
                                                                    line["n_seeds"].max(), "configurations"))


def plot_divergence(result: Divergence):
    data = result.rows

    def hover(rows):
        return (rows["framework"] + " (" + rows[REGIME] + ") " + rows["parameter"] + " " + rows["value"] + ": "
                + rows["n_diverged"].astype(str) + " diverged, " + rows["n_failed"].astype(str) + " failed of n="
                + rows["n_trials"].astype(str) + " trials (" + rows["n_seeds"].astype(str) + " seeds)")
    fig = _per_parameter(data, "divergence_rate", hover, "Divergence rate across each parameter's range",
                         "diverged / trials", marks=lambda rows: (rows["n_defaults"] > 0, rows["divergence_rate"]),
                         legend=lambda name, line: framework_label(name, line["n_trials"].sum(),
                                                                   line["n_seeds"].max()))
    return fig.update_yaxes(range=[-0.03, 1.03])  # a rate: never below 0 or above 1, even when all are 0


def plot_slice(result: Slice):
    points = result.rows
    names = list(points["parameter"].unique())  # in order of appearance
    fig, positions, height = _grid(names)
    palette, regimes = colours(points["framework"]), regimes_of(points)
    counts = points.drop_duplicates("number").groupby(["framework", REGIME]).size()
    for name, (row, col) in zip(names, positions):
        rows = points[points["parameter"] == name]
        scale = rows["scale"].iloc[0]
        text = (lambda part: part.assign(value=part["value"].map(format_value))) if scale == "category" else (
            lambda part: part)  # category labels for the drawn points only
        if scale == "category":
            _ordered_axis(fig, [format_value(v) for v in sorted(rows["value"].unique().tolist(), key=numeric_sort_key)],
                          row, col)
        for framework, regime, part in _series(rows):
            series = series_name(framework, regime, regimes)
            part, note = drawn(part)
            part = text(part)
            fig.add_trace(go.Scattergl(  # no object arrays where avoidable: plotly deep-copies those item by item
                x=part["value"].to_numpy(dtype=object if scale == "category" else float),
                y=part["accuracy"].to_numpy(), mode="markers",
                name=f"{series} (n={counts[(framework, regime)]} trials{note})", legendgroup=series,
                showlegend=(row, col) == (1, 1),
                marker=dict(color=palette[framework], size=5, opacity=0.5, symbol=symbol(regime)),
                hovertext=("#" + part["number"].astype(str) + " " + part["outcome"]).to_numpy(dtype=str),
                hoverinfo="text+x+y"),
                row=row, col=col)
        marked = text(rows[rows["is_default"]])
        add_default_marks(fig, marked["value"], marked["accuracy"], marked["framework"] + " (" + marked[REGIME]
                          + ") default", row, col)
        if scale == "log":
            fig.update_xaxes(type="log", row=row, col=col)
        fig.update_yaxes(title="accuracy" if col == 1 else None, row=row, col=col)
    return finish(fig, regime_title("Slice: accuracy against each parameter (complete trials)", regimes), height)


def plot_contour(result: Contour):
    """A contour where the binned grid is mostly filled; a heatmap of the filled cells where it is sparse
    (contours drawn across empty cells would show values no trial measured). One panel per pair and regime."""
    grid = result.rows
    regimes = regimes_of(grid)
    panels = [(x, y, r) for x, y in dict.fromkeys(zip(grid["x_parameter"], grid["y_parameter"])) for r in regimes]
    fig, positions, height = _grid([f"{y} against {x}" + (f" ({r})" if len(regimes) > 1 else "")
                                    for x, y, r in panels], height_per_row=380)
    for (x_name, y_name, regime), (row, col) in zip(panels, positions):
        cells = grid[(grid["x_parameter"] == x_name) & (grid["y_parameter"] == y_name) & grid[REGIME].eq(regime)]
        x, y = _axis_values(cells, "x"), _axis_values(cells, "y")
        mean = ~cells["is_default"].astype(bool)
        filled = mean.sum() / max(1, x[mean].nunique() * y[mean].nunique())
        trace = go.Contour if filled >= 0.8 else go.Heatmap
        fig.add_trace(trace(x=x[mean], y=y[mean], z=cells["accuracy"][mean], coloraxis="coloraxis",
                            text=cells["n_trials"][mean], name=f"{y_name} | {x_name} ({regime})",
                            hovertemplate="%{x}, %{y}: mean accuracy %{z:.4f} (n=%{text} trials)<extra></extra>"),
                      row=row, col=col)
        add_default_marks(fig, x[~mean], y[~mean], cells["framework"][~mean].astype(str) + f" ({regime}) default",
                          row, col)
        fig.update_xaxes(title=_axis_title(cells, "x"), row=row, col=col)
        fig.update_yaxes(title=_axis_title(cells, "y"), row=row, col=col)
    fig.update_layout(coloraxis=dict(colorscale="Viridis", colorbar=dict(title="mean accuracy")))
    finish(fig, regime_title("Mean accuracy per cell of a binned grid (complete trials, all frameworks)", regimes),
           height)
    return fig.update_layout(legend=dict(orientation="h", y=-0.15))


def _axis_values(cells: pd.DataFrame, axis: str) -> pd.Series:
    values = cells[axis].astype(float)
    return np.log10(values) if (cells[f"{axis}_scale"] == "log").all() else values


def _axis_title(cells: pd.DataFrame, axis: str) -> str:
    name = cells[f"{axis}_parameter"].iloc[0]
    return f"log10({name})" if (cells[f"{axis}_scale"] == "log").all() else name


def plot_curves(result: Curves):
    curves, metric = result.rows, result.metric
    palette, regimes, fig = colours(curves["framework"]), regimes_of(curves), go.Figure()
    series = _series(curves.sort_values(["number", "epoch"]))
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
    for framework, regime, rows in series:  # then the medians on top, of every trial (WebGL too: it draws above svg traces)
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


def plot_seeds(result: Seeds, metric: str = "accuracy", top: int = 20):
    intervals = result.rows
    rows = framework_comparisons(intervals, metric, top)
    palette, regimes, fig = colours(rows["framework"]), regimes_of(rows), go.Figure()
    digits = 4 if metric.endswith("accuracy") else 2
    text = [interval_text(m, lo, hi, n, digits) for m, lo, hi, n in zip(
        rows[f"{metric}_mean"], rows[f"{metric}_low"], rows[f"{metric}_high"], rows[f"{metric}_n"])]
    rows = rows.assign(n_text="n=" + rows["n_seeds"].astype(str), hover=rows["framework"] + " (" + rows[REGIME]
                       + ") " + rows["configuration"] + "<br>" + pd.Series(text, index=rows.index))
    for framework, regime, part in _series(rows):
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


def plot_resources(result: Resources):
    """Bars per framework and regime (the framework's colour; canonical hatched), n on each tick."""
    usage, metrics = result.rows, list(result.units)
    fig, positions, height = _grid([f"{m} ({result.units[m]}, median)" for m in metrics])
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
