"""The figures of comparisons between studies: the ablation path, crossovers, the findings' effects, robustness
and transfer. Each `plot_<kind>` draws what its compute function returned (in the module named after it)."""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.tables.arms import runs_of
from sensitivity.analysis.tables.crossover import NEEDS
from sensitivity.analysis.figures.results import Ablation, Robustness, Transfer
from sensitivity.analysis.claims.findings import CLAIMS, EFFECT, UNITS, Findings, margin_of
from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.figures.style import colours, dash, finish, go, make_subplots, regime_title, series_name, symbol
from sensitivity.analysis.table import REGIME, NotEnoughData, regimes_of, trained, trials_table


def plot_ablation(result: Ablation):
    """Validation and test accuracy (top) and train time (bottom) along the path, each with its interval."""
    path = result.rows

    labels = [f"{i}. {c}" for i, c in zip(path["step"], path["change"])]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("Accuracy: mean, 95% interval (n=2: the range); chosen on validation", "Train time (s)"))
    for metric, name, row in (("val_accuracy", "validation accuracy", 1), ("accuracy", "test accuracy", 1),
                              ("train_time_s", "train time", 2)):
        mean = path[f"{metric}_mean"]
        fig.add_trace(go.Scatter(x=labels, y=mean, name=name, mode="lines+markers",
                                 error_y=dict(type="data", symmetric=False,
                                              array=(path[f"{metric}_high"] - mean).fillna(0),
                                              arrayminus=(mean - path[f"{metric}_low"]).fillna(0)),
                                 text=[f"n={n}" for n in path["n"]]), row=row, col=1)
    inert = result.inert
    title = f"Ablation path: {result.source} to {result.target}, n={result.seeds} seeds"
    fig.update_layout(title=title + (f" (no effect here: {', '.join(inert)})" if inert else ""), height=640,
                      margin=dict(b=160))
    fig.update_xaxes(tickangle=-25, row=2, col=1)
    return fig


def plot_crossover(crossovers: pd.DataFrame, table):
    """Per crossover (a panel): each tuned configuration's mean test accuracy (95% interval) on the two datasets;
    lines that cross are a home advantage."""

    rows = trained(trials_table(table))
    rows = rows[rows["crossover"].notna()] if "crossover" in rows else rows.iloc[0:0]
    if crossovers.empty or rows.empty:
        raise NotEnoughData(NEEDS)
    titles = [f"{'placebo: ' if r['placebo'] else ''}{r['framework']}, {r[REGIME]}: {r['dataset_a']} x {r['dataset_b']}"
              + (f" ({r['model']})" if r.get("model") else "")
              for r in crossovers.to_dict("records")]
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=titles, horizontal_spacing=0.12)
    for col, row in enumerate(crossovers.to_dict("records"), start=1):
        part = rows[rows["crossover"].eq(row["crossover"]) & rows[REGIME].eq(row[REGIME])]
        datasets = [row["dataset_a"], row["dataset_b"]]
        for tuned, colour in zip(datasets, ("#1f77b4", "#d62728")):
            means, lows, highs = [], [], []
            for on in datasets:
                arm = runs_of(part[part["tuned_for"].eq(tuned) & part["dataset"].eq(on)], on).arm
                interval = mean_interval(arm.accuracy)
                means.append(interval.mean)
                lows.append(interval.mean - (interval.low if interval.low is not None else interval.mean))
                highs.append((interval.high if interval.high is not None else interval.mean) - interval.mean)
            label = row["config_a"] if tuned == row["dataset_a"] else row["config_b"]
            fig.add_trace(go.Scatter(x=datasets, y=means, mode="lines+markers", name=f"tuned for {tuned}",
                                     legendgroup=tuned, showlegend=col == 1, line=dict(color=colour),
                                     error_y=dict(type="data", symmetric=False, array=highs, arrayminus=lows),
                                     hovertext=[f"tuned for {tuned} ({label}) on {on}" for on in datasets],
                                     hoverinfo="text+y"), row=1, col=col)
    fig.update_yaxes(title_text="test accuracy (converged runs; chance where all diverged)", col=1)
    fig = finish(fig, "Dataset crossover: each dataset's tuned configuration on both datasets", 460)
    return fig.update_layout(width=max(640, 420 * len(titles)))


def plot_findings(found: Findings):
    """A forest plot of the comparisons: difference and 95% interval, one row of panels per claim, one column per
    regime; each claim's margin shaded around zero; hollow where there is no interval."""

    frame = found.comparisons if isinstance(found, Findings) else found
    shown = frame[frame["unit"].ne("frontier") & frame["estimate"].notna()]
    if shown.empty:
        raise NotEnoughData("findings need comparisons: run sensitivity transfer, crossover, robustness, or a sweep "
                            "of two or more frameworks")
    claims = [c for c in CLAIMS if c in set(shown["claim"])]
    regimes = regimes_of(shown)
    sizes = [max(1, shown.loc[shown["claim"].eq(c), "label"].nunique()) for c in claims]
    height = 160 + 26 * sum(sizes) + 120 * len(claims)
    fig = make_subplots(rows=len(claims), cols=len(regimes), row_heights=sizes, shared_yaxes=True,
                        vertical_spacing=min(0.9 / max(1, len(claims) - 1), 110 / (height - 190)),
                        horizontal_spacing=0.03,
                        subplot_titles=[f"{c}, {r}" for c in claims for r in regimes])
    colours = {"lower": "#d62728", "higher": "#2ca02c", "equivalent": "#1f77b4", "inconclusive": "#7f7f7f",
               "cut budget": "#bcbd22"}
    effect = frame.attrs.get("effect", EFFECT)
    for i, claim in enumerate(claims, start=1):
        labels = list(dict.fromkeys(shown[shown["claim"].eq(claim)]["label"]))
        for j, regime in enumerate(regimes, start=1):
            part = shown[shown["claim"].eq(claim) & shown[REGIME].eq(regime)]
            for has, points in part.groupby(part["low"].notna()):  # no error bar where there is no interval
                error = dict(type="data", symmetric=False, array=points["high"].astype(float) - points["estimate"],
                             arrayminus=points["estimate"] - points["low"].astype(float)) if has else None
                fig.add_trace(go.Scatter(
                    x=points["estimate"], y=points["label"], mode="markers", showlegend=False, error_x=error,
                    marker=dict(size=9, color=points["verdict"].map(colours).fillna("#7f7f7f"),
                                symbol="circle" if has else "circle-open", line=dict(width=2)),
                    hovertext=points["sentence"], hoverinfo="text"), row=i, col=j)
            margin = margin_of(claim, effect)
            fig.add_vrect(x0=-margin, x1=margin, fillcolor="#1f77b4", opacity=0.1, line_width=0, row=i, col=j)
            fig.add_vline(x=0, line=dict(color="black", width=1), row=i, col=j)
        fig.update_yaxes(automargin=True, categoryorder="array", categoryarray=labels[::-1], row=i, col=1)
        fig.update_xaxes(title=dict(text=UNITS[claim], font=dict(size=11)), row=i)
    fig.update_xaxes(zeroline=False)
    title = regime_title("Findings: each comparison's difference and 95% interval", regimes)
    fig = finish(fig, title + "<br><sub>red: lower; green: higher; blue: equivalent, within the shaded margin; "
                              "grey: inconclusive; olive: cut budget, not tested; hollow: under 3 seeds</sub>", height)
    return fig.update_layout(margin=dict(t=130))


def plot_robustness(result: Robustness):
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
        _curves(fig, white, "accuracy", palette, shown, row, 1, regimes)
        _curves(fig, white, "relative", palette, shown, row, 2, regimes)
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


def plot_transfer(result: Transfer):
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


def _curves(fig, rows: pd.DataFrame, value: str, palette: dict, shown: set, row: int, col: int,
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
