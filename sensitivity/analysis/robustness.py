"""Robustness to adversarial examples (Liu et al. 2018): accuracy against epsilon, white-box and transferred.

`sensitivity robustness` stores one record per attacked trial in the study (user attribute
`robustness:NUMBER`); the trial table carries them in `attrs["robustness"]`. `robustness_curves` gives one
row per dataset, attack, epsilon and (source framework, target framework): the mean accuracy over the
target models, its 95% Student-t interval (empty for n < 2, never made up) and n, the models behind it.
`kind` is `white-box` where each model was attacked through its own gradient, `transfer` where it was
tested on the examples other models' attacks made (other seeds of its own framework included).
Every row carries the target model's regime (`semantics`); a mean is over models of one regime, and
examples made on a model of one regime and tested on a model of the other are left out of the curves
(`robustness_rows` keeps them, with `source_semantics`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sensitivity.analysis.style import colours, dash, finish, go, make_subplots, regime_title, series_name, symbol
from sensitivity.analysis.table import REGIME, NotEnoughData, regime_sorted, regimes_of, trained, trials_table

PREFIX = "robustness:"
NEEDS = "robustness needs trained weights attacked by sensitivity robustness (sweep with --keep-weights first)"


def robustness_rows(table) -> pd.DataFrame:
    """One row per target model, attack, epsilon and source model (the target itself for white-box)."""
    table = trials_table(table)
    records = table.attrs.get("robustness") or {}
    models = trained(table).set_index("number") if len(table) else table
    rows = []
    for number, record in records.items():
        number = int(number)
        if number not in models.index:
            continue
        target = models.loc[number]
        base = {"dataset": target.get("dataset"), REGIME: target[REGIME], "target_trial": number,
                "target_framework": target["framework"], "samples": record["samples"],
                "clean_accuracy": record["clean"]}
        sources = [(number, "white-box", record["white_box"])]
        sources += [(int(s), "transfer", accs) for s, accs in record.get("transfer", {}).items()]
        for source, kind, by_attack in sources:
            if source not in models.index:
                continue
            for attack, accuracies in by_attack.items():
                for eps, accuracy in zip(record["eps"], accuracies):
                    rows.append({**base, "source_trial": source, "source_framework": models.loc[source, "framework"],
                                 "source_semantics": models.loc[source, REGIME], "kind": kind, "attack": attack,
                                 "eps": eps, "accuracy": accuracy})
    if not rows:
        raise NotEnoughData(NEEDS)
    return pd.DataFrame(rows)


def robustness_curves(table, confidence: float = 0.95) -> pd.DataFrame:
    """Mean accuracy over target models per regime, dataset, attack, eps, kind and framework pair, with
    interval; pairs of models of different regimes are left out."""
    from scipy import stats

    rows = robustness_rows(table)
    rows = rows[rows[REGIME].eq(rows["source_semantics"])]
    keys = [REGIME, "dataset", "attack", "kind", "source_framework", "target_framework", "eps"]
    # a target tested on several source models of one framework counts once: its mean over them
    per_target = rows.groupby(keys + ["target_trial"], dropna=False)["accuracy"].mean().reset_index()
    out = (per_target.groupby(keys, dropna=False)["accuracy"]
           .agg(accuracy_mean="mean", accuracy_std="std", n="count").reset_index())
    n = out["n"].to_numpy(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(n >= 2, stats.t.ppf((1 + confidence) / 2, np.maximum(n - 1, 1)), np.nan)
        half = t * out["accuracy_std"].to_numpy(float) / np.sqrt(n)
    out["accuracy_low"], out["accuracy_high"] = out["accuracy_mean"] - half, out["accuracy_mean"] + half
    out["samples"] = int(rows["samples"].min())
    return regime_sorted(out.drop(columns="accuracy_std"), keys)


def plot_robustness(curves: pd.DataFrame):
    """One row per dataset, attack and regime: white-box accuracy against eps per framework (mean and
    interval, n in the legend), and at the largest eps the accuracy of the models of one framework (column)
    on the examples made on another (row); the diagonal is white-box."""
    regimes = regimes_of(curves)
    panels = sorted({(d, a, r) for d, a, r in zip(curves["dataset"], curves["attack"], curves[REGIME])},
                    key=lambda p: (p[0], p[1], regimes.index(p[2])))
    top = curves["eps"].max()
    titles = [t for d, a, r in panels for t in (f"{d}, {a.upper()}, {r}: white-box",
                                                 f"{d}, {a.upper()}, {r} at eps {top:g}")]
    fig = make_subplots(rows=len(panels), cols=2, subplot_titles=titles, column_widths=[0.58, 0.42],
                        horizontal_spacing=0.12, vertical_spacing=0.35 / max(1, len(panels)))
    palette, shown = colours(curves["target_framework"]), set()
    for row, (dataset, attack, regime) in enumerate(panels, start=1):
        part = curves[curves["dataset"].eq(dataset) & curves["attack"].eq(attack) & curves[REGIME].eq(regime)]
        _curves(fig, part[part["kind"].eq("white-box")], palette, shown, row, 1, regimes)
        _matrix(fig, part, row, 2)
        fig.update_xaxes(title="eps", row=row, col=1)
        fig.update_yaxes(title="accuracy", range=[0, 1.02], row=row, col=1)
        fig.update_xaxes(title="tested on", type="category", row=row, col=2)
        fig.update_yaxes(title="made on", type="category", row=row, col=2)
    samples = int(curves["samples"].min())
    return finish(fig, regime_title(f"Robustness to adversarial examples ({samples} test samples per model)",
                                    regimes), 330 * len(panels) + 120)


def _curves(fig, rows: pd.DataFrame, palette: dict, shown: set, row: int, col: int, regimes: list) -> None:
    for (framework, regime), line in rows.groupby(["target_framework", REGIME]):
        line = line.sort_values("eps")
        n = int(line["n"].min())
        name = series_name(framework, regime, regimes)
        error = (line["accuracy_high"] - line["accuracy_mean"]).fillna(0)
        fig.add_trace(go.Scatter(x=line["eps"], y=line["accuracy_mean"], mode="lines+markers",
                                 name=f"{name} (n={n} model{'s' if n != 1 else ''})", legendgroup=name,
                                 showlegend=name not in shown, line=dict(color=palette[framework], dash=dash(regime)),
                                 marker=dict(symbol=symbol(regime)),
                                 error_y=dict(type="data", array=error, visible=True),
                                 hovertext=[f"{name} eps {e:g}: {m:.3f} (n={k})" for e, m, k
                                            in zip(line["eps"], line["accuracy_mean"], line["n"])],
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
