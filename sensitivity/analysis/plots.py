"""One thin `plot_<kind>` per kind of figure, drawing what its compute function returned, and `KINDS`, the
registry of kind -> (compute, plot): a new figure is one line there. `write_figure` computes, draws and
writes one figure from a study or a trial table.
"""
from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pandas as pd

from sensitivity.analysis import export
from sensitivity.analysis.curves import contour_grid, curve_metric, learning_curves, slice_points
from sensitivity.analysis.divergence import divergence_rates
from sensitivity.analysis.frontier import ALL, Frontier, runtime_accuracy_frontier
from sensitivity.analysis.importance import parameter_importance
from sensitivity.analysis.isolation import isolation
from sensitivity.analysis.resources import DEFAULTS, UNITS, resource_use
from sensitivity.analysis.robustness import plot_robustness, robustness_curves
from sensitivity.analysis.seeds import framework_comparisons, seed_intervals
from sensitivity.analysis.style import add_default_marks, colours, finish, framework_label, go, make_subplots
from sensitivity.analysis.table import trials_table
from sensitivity.analysis.transfer import plot_transfer, transfer_matrix


def _grid(titles, cols: int = 3, height_per_row: int = 320):
    rows = max(1, math.ceil(len(titles) / cols))
    fig = make_subplots(rows=rows, cols=min(cols, len(titles)), subplot_titles=list(titles),
                        horizontal_spacing=0.08, vertical_spacing=0.5 / rows)
    return fig, [(i // cols + 1, i % cols + 1) for i in range(len(titles))], rows * height_per_row + 120


def _ordered_axis(fig, labels, row, col) -> None:
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(labels), row=row, col=col)


def plot_frontier(frontier: Frontier):
    points, summary = frontier.points, frontier.summary.set_index("scope")
    palette, fig = colours(points["framework"]), go.Figure()
    hover = ("#" + points["number"].astype(str) + " " + points["framework"] + " seed " + points["seed"].astype(str)
             + " (" + points["outcome"] + ")<br>accuracy " + points["accuracy"].round(4).astype(str)
             + ", train " + points["train_time_s"].round(2).astype(str) + " s")
    ok = points[points["outcome"] == "ok"].groupby("framework")
    for framework, rows in ok:  # every cloud first, so that no cloud hides a frontier
        s = summary.loc[framework]
        name = framework_label(framework, s["n_trials"], s["n_seeds"]) + f", hypervolume {s['hypervolume']:.3g}"
        fig.add_trace(go.Scattergl(x=rows["train_time_s"], y=rows["accuracy"], mode="markers", name=name,
                                   legendgroup=framework, marker=dict(color=palette[framework], size=6, opacity=0.45),
                                   hovertext=hover[rows.index], hoverinfo="text"))
    for framework, rows in ok:
        front = rows[rows["on_framework_frontier"]]
        fig.add_trace(go.Scatter(x=front["train_time_s"], y=front["accuracy"], mode="lines+markers",
                                 line=dict(color=palette[framework], shape="hv"), legendgroup=framework,
                                 name=f"{framework} frontier", hovertext=hover[front.index], hoverinfo="text"))
    front = points[points["on_frontier"]].sort_values("train_time_s")
    fig.add_trace(go.Scatter(x=front["train_time_s"], y=front["accuracy"], mode="lines",
                             line=dict(color="black", width=2, dash="dot", shape="hv"),
                             name=f"overall frontier (hypervolume {summary.loc[ALL, 'hypervolume']:.3g})"))
    diverged = points[points["outcome"] == "diverged"]
    if len(diverged):
        fig.add_trace(go.Scattergl(x=diverged["train_time_s"], y=diverged["accuracy"], mode="markers",
                                   name=f"diverged (n={len(diverged)}, never on a frontier)",
                                   marker=dict(symbol="x", color="grey", size=6), hovertext=hover[diverged.index],
                                   hoverinfo="text"))
    defaults = points[points["is_default"]]
    add_default_marks(fig, defaults["train_time_s"], defaults["accuracy"], hover[defaults.index])
    fig.update_xaxes(title="train time (s)")
    fig.update_yaxes(title="accuracy")
    return finish(fig, "Runtime-accuracy frontier (pruned and failed trials excluded)", 560)


def plot_importance(importance: pd.DataFrame):
    fig = go.Figure()
    order = importance.sort_values(["evaluator", "rank"]).drop_duplicates("parameter")["parameter"].tolist()
    for i, (evaluator, rows) in enumerate(importance.groupby("evaluator", sort=False)):
        rows = rows.set_index("parameter").reindex(order[::-1]).dropna(subset=["importance"])
        marked = np.where((rows["defaults"] != "") & (rows.index != "framework"),
                          "framework defaults: " + rows["defaults"].astype(str), "")
        fig.add_trace(go.Bar(y=rows.index, x=rows["importance"], orientation="h", name=evaluator,
                             text=marked if i == 0 else None, textposition="outside",
                             hovertext=[f"{evaluator} {p}: {v:.3f} (rank {r}, n={n} trials)<br>{m}" for p, v, r, n, m
                                        in zip(rows.index, rows["importance"], rows["rank"], rows["n_trials"], marked)],
                             hoverinfo="text"))
    fig.update_layout(barmode="group", legend=dict(traceorder="reversed"))
    fig.update_xaxes(title="importance for accuracy (sums to 1 per evaluator)")
    return finish(fig, "Hyper-parameter importance (PED-ANOVA; fANOVA with 16 trees of depth 8)",
                  200 + 50 * len(order))


def _per_parameter(data: pd.DataFrame, y: str, hover, title: str, y_title: str, marks, legend):
    """Subplots per parameter, one line per framework over the parameter's ordered values or bins;
    `marks(rows)` gives (mask, y) of the points to star as framework defaults, `legend(line)` the
    framework's name with its n."""
    names = list(dict.fromkeys(data["parameter"]))
    fig, positions, height = _grid(names)
    palette = colours(data["framework"])
    for name, (row, col) in zip(names, positions):
        rows = data[data["parameter"] == name].sort_values("order")
        _ordered_axis(fig, rows.drop_duplicates("order")["value"], row, col)
        for framework, line in rows.groupby("framework"):
            fig.add_trace(go.Scatter(x=line["value"], y=line[y], mode="lines+markers", name=legend(line),
                                     legendgroup=framework, showlegend=(row, col) == (1, 1),
                                     marker=dict(color=palette[framework]), hovertext=hover(line),
                                     hoverinfo="text"), row=row, col=col)
        mask, marked_y = marks(rows)
        add_default_marks(fig, rows["value"][mask], marked_y[mask], rows["framework"][mask] + " default", row, col)
        fig.update_yaxes(title=y_title if col == 1 else None, row=row, col=col)
    return finish(fig, title, height)


def plot_isolation(data: pd.DataFrame):
    def hover(rows):
        return (rows["framework"] + " " + rows["parameter"] + " " + rows["value"] + ": best accuracy "
                + rows["best_accuracy"].round(4).astype(str) + " (n=" + rows["n_seeds"].astype(str)
                + " seeds; best of " + rows["n_configs"].astype(str) + " configurations)<br>nuisance: "
                + rows["nuisance"])
    return _per_parameter(data, "best_accuracy", hover, "Isolation: best accuracy over the nuisance parameters "
                          "(mean over seeds)", "best accuracy",
                          marks=lambda rows: (rows["default_accuracy"].notna(), rows["default_accuracy"]),
                          legend=lambda line: framework_label(line["framework"].iloc[0], line["n_configs"].sum(),
                                                              line["n_seeds"].max(), "configurations"))


def plot_divergence(data: pd.DataFrame):
    def hover(rows):
        return (rows["framework"] + " " + rows["parameter"] + " " + rows["value"] + ": "
                + rows["n_diverged"].astype(str) + " diverged, " + rows["n_failed"].astype(str) + " failed of n="
                + rows["n_trials"].astype(str) + " trials (" + rows["n_seeds"].astype(str) + " seeds)")
    return _per_parameter(data, "divergence_rate", hover, "Divergence rate across each parameter's range",
                          "diverged / trials", marks=lambda rows: (rows["n_defaults"] > 0, rows["divergence_rate"]),
                          legend=lambda line: framework_label(line["framework"].iloc[0], line["n_trials"].sum(),
                                                              line["n_seeds"].max()))


def plot_slice(points: pd.DataFrame):
    names = list(dict.fromkeys(points["parameter"]))
    fig, positions, height = _grid(names)
    palette = colours(points["framework"])
    counts = points.drop_duplicates("number").groupby("framework").size()
    for name, (row, col) in zip(names, positions):
        rows = points[points["parameter"] == name]
        scale = rows["scale"].iloc[0]
        if scale == "category":
            _ordered_axis(fig, sorted(rows["value"].unique().tolist(), key=str), row, col)
            rows = rows.assign(value=rows["value"].astype(str))
        for framework, part in rows.groupby("framework"):
            fig.add_trace(go.Scattergl(
                x=part["value"].to_numpy(), y=part["accuracy"].to_numpy(), mode="markers",
                name=f"{framework} (n={counts[framework]} trials)", legendgroup=framework,
                showlegend=(row, col) == (1, 1), marker=dict(color=palette[framework], size=5, opacity=0.5),
                hovertext="#" + part["number"].astype(str) + " " + part["outcome"], hoverinfo="text+x+y"),
                row=row, col=col)
        marked = rows[rows["is_default"]]
        add_default_marks(fig, marked["value"], marked["accuracy"], marked["framework"] + " default", row, col)
        if scale == "log":
            fig.update_xaxes(type="log", row=row, col=col)
        fig.update_yaxes(title="accuracy" if col == 1 else None, row=row, col=col)
    return finish(fig, "Slice: accuracy against each parameter (complete trials)", height)


def plot_contour(grid: pd.DataFrame):
    """A contour where the binned grid is mostly filled; a heatmap of the filled cells where it is sparse
    (contours drawn across empty cells would show values no trial measured)."""
    pairs = list(dict.fromkeys(zip(grid["x_parameter"], grid["y_parameter"])))
    fig, positions, height = _grid([f"{y} against {x}" for x, y in pairs], height_per_row=380)
    for (x_name, y_name), (row, col) in zip(pairs, positions):
        cells = grid[(grid["x_parameter"] == x_name) & (grid["y_parameter"] == y_name)]
        x, y = _axis_values(cells, "x"), _axis_values(cells, "y")
        mean = ~cells["is_default"].astype(bool)
        filled = mean.sum() / max(1, x[mean].nunique() * y[mean].nunique())
        trace = go.Contour if filled >= 0.8 else go.Heatmap
        fig.add_trace(trace(x=x[mean], y=y[mean], z=cells["accuracy"][mean], coloraxis="coloraxis",
                            text=cells["n_trials"][mean], name=f"{y_name} | {x_name}",
                            hovertemplate="%{x}, %{y}: mean accuracy %{z:.4f} (n=%{text} trials)<extra></extra>"),
                      row=row, col=col)
        add_default_marks(fig, x[~mean], y[~mean], cells["framework"][~mean].astype(str) + " default", row, col)
        fig.update_xaxes(title=_axis_title(cells, "x"), row=row, col=col)
        fig.update_yaxes(title=_axis_title(cells, "y"), row=row, col=col)
    fig.update_layout(coloraxis=dict(colorscale="Viridis", colorbar=dict(title="mean accuracy")))
    finish(fig, "Mean accuracy per cell of a binned grid (complete trials, all frameworks)", height)
    return fig.update_layout(legend=dict(orientation="h", y=-0.15))


def _axis_values(cells: pd.DataFrame, axis: str) -> pd.Series:
    values = cells[axis].astype(float)
    return np.log10(values) if (cells[f"{axis}_scale"] == "log").all() else values


def _axis_title(cells: pd.DataFrame, axis: str) -> str:
    name = cells[f"{axis}_parameter"].iloc[0]
    return f"log10({name})" if (cells[f"{axis}_scale"] == "log").all() else name


def plot_curves(curves: pd.DataFrame):
    metric = curve_metric(curves)
    palette, fig = colours(curves["framework"]), go.Figure()
    by_framework = curves.sort_values(["number", "epoch"]).groupby("framework")
    for framework, rows in by_framework:  # every trial's curve, faint where there are many
        breaks = np.flatnonzero(np.diff(rows["number"].to_numpy())) + 1  # a gap between trials
        x = np.insert(rows["epoch"].to_numpy(float), breaks, np.nan)
        y = np.insert(rows[metric].to_numpy(float), breaks, np.nan)
        n_trials = rows["number"].nunique()
        fig.add_trace(go.Scattergl(x=x, y=y, mode="lines", name=framework_label(framework, n_trials,
                                                                                rows["seed"].nunique()),
                                   legendgroup=framework, line=dict(color=palette[framework], width=1),
                                   opacity=min(0.35, max(0.02, 30 / n_trials)), hoverinfo="skip"))
    for framework, rows in by_framework:  # then the medians on top (WebGL too: it draws above svg traces)
        median = rows.groupby("epoch")[metric].median()
        fig.add_trace(go.Scattergl(x=median.index, y=median.to_numpy(), mode="lines+markers", legendgroup=framework,
                                   name=f"{framework} median", line=dict(color=palette[framework], width=4),
                                   marker=dict(size=8, line=dict(color="white", width=1))))
    last = curves[curves["is_default"].astype(bool)].sort_values("epoch").drop_duplicates("number", keep="last")
    add_default_marks(fig, last["epoch"], last[metric], last["framework"] + " default #" + last["number"].astype(str))
    fig.update_xaxes(title="epoch", dtick=1)
    fig.update_yaxes(title=metric.replace("_", " "))
    return finish(fig, "Learning curves (ok, diverged and pruned trials)", 520)


def plot_seeds(intervals: pd.DataFrame, metric: str = "accuracy", top: int = 20):
    rows = framework_comparisons(intervals, metric, top)
    palette, fig = colours(rows["framework"]), go.Figure()
    mean, low, high = rows[f"{metric}_mean"], rows[f"{metric}_low"], rows[f"{metric}_high"]
    interval = np.where(low.notna(), " [" + low.round(4).astype(str) + ", " + high.round(4).astype(str) + "]",
                        " (no interval with one seed)")
    rows = rows.assign(n_text="n=" + rows["n_seeds"].astype(str), hover=rows["framework"] + " "
                       + rows["configuration"] + "<br>mean " + mean.round(4).astype(str) + interval + ", n="
                       + rows["n_seeds"].astype(str) + " seeds")
    for framework, part in rows.groupby("framework"):
        fig.add_trace(go.Scatter(
            y=part["configuration"], x=part[f"{metric}_mean"], mode="markers+text", orientation="h",
            name=framework_label(framework, part["n_seeds"].sum(), part["n_seeds"].max()), text=part["n_text"],
            textposition="middle right", marker=dict(color=palette[framework], size=9), hovertext=part["hover"],
            hoverinfo="text", error_x=dict(type="data", symmetric=False, array=part[f"{metric}_high"] - part[
                f"{metric}_mean"], arrayminus=part[f"{metric}_mean"] - part[f"{metric}_low"])))
    if "is_default" in rows:
        marked = rows[rows["is_default"].astype(bool)]
        add_default_marks(fig, marked[f"{metric}_mean"], marked["configuration"], marked["hover"])
    labels = rows.drop_duplicates("position")["configuration"].tolist()
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels[::-1], automargin=True)
    fig.update_layout(scattermode="group")
    fig.update_xaxes(title=f"{metric.replace('_', ' ')} (mean over seeds)")
    confidence = f"{intervals['confidence'].iloc[0]:.0%}"
    return finish(fig, f"{metric.replace('_', ' ').capitalize()} over seeds per configuration: mean and "
                       f"{confidence} interval (Student t); n=1 shows the mean only", 160 + 34 * len(labels))


def plot_resources(usage: pd.DataFrame):
    metrics = [m for m in UNITS if m in usage]
    fig, positions, height = _grid([f"{m} ({UNITS[m]}, median)" for m in metrics])
    everything, defaults = usage[usage["subset"] != DEFAULTS], usage[usage["subset"] == DEFAULTS]
    palette = colours(usage["framework"])
    ticks = {fw: f"{fw}<br>n={n}, {s} seed{'s' if s != 1 else ''}" for fw, n, s in
             zip(everything["framework"], everything["n_trials"], everything["n_seeds"])}
    for metric, (row, col) in zip(metrics, positions):
        fig.add_trace(go.Bar(x=everything["framework"].map(ticks), y=everything[metric], showlegend=False,
                             marker=dict(color=everything["framework"].map(palette).tolist()),
                             hovertext=everything["framework"].map(ticks).str.replace("<br>", " "),
                             hoverinfo="text+y"), row=row, col=col)
        add_default_marks(fig, defaults["framework"].map(ticks), defaults[metric],
                          defaults["framework"] + " defaults: n=" + defaults["n_trials"].astype(str), row, col)
    return finish(fig, "Resource use per framework (trained trials)", height)


KINDS = {
    "frontier": (runtime_accuracy_frontier, plot_frontier),
    "importance": (parameter_importance, plot_importance),
    "isolation": (isolation, plot_isolation),
    "slice": (slice_points, plot_slice),
    "contour": (contour_grid, plot_contour),
    "curves": (learning_curves, plot_curves),
    "seeds": (seed_intervals, plot_seeds),
    "resources": (resource_use, plot_resources),
    "divergence": (divergence_rates, plot_divergence),
    "transfer": (transfer_matrix, plot_transfer),
    "robustness": (robustness_curves, plot_robustness),
}
# kinds drawn from any study; the others need its planned trials of defaults (sensitivity transfer) or
# its trained models attacked (sensitivity robustness)
STUDY_KINDS = tuple(kind for kind in KINDS if kind not in ("transfer", "robustness"))


def figure(study_or_frame, kind: str, **options):
    """The figure of `kind` for a study or a trial table; each option goes to the compute or the plot
    function that takes it (e.g. parameters=["lr"] and bins=8 for isolation, top=10 for seeds)."""
    if kind not in KINDS:
        raise ValueError(f"unknown figure kind {kind!r}; allowed: {', '.join(KINDS)}")
    compute, plot = KINDS[kind]
    computing, plotting = _options(compute), _options(plot) - _options(compute)
    unknown = sorted(set(options) - computing - plotting)
    if unknown:
        allowed = ", ".join(sorted(computing | plotting)) or "none"
        raise ValueError(f"unknown option {unknown[0]!r} for {kind}; allowed: {allowed}")
    data = compute(trials_table(study_or_frame), **{k: v for k, v in options.items() if k in computing})
    return plot(data, **{k: v for k, v in options.items() if k in plotting})


def _options(function) -> set:
    """The keyword options of a compute or plot function: its parameters after the data."""
    return set(list(inspect.signature(function).parameters)[1:])


def write_figure(study_or_frame, kind: str, out_path, **options) -> Path:
    """Compute, draw and write one figure: .html (self-contained), .png, .svg or .pdf; returns the path."""
    return export.write(figure(study_or_frame, kind, **options), out_path)
