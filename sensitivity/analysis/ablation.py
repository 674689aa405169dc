"""The ablation path of `sensitivity ablate`: one row per step, with its 95% intervals, and its figure.

The path is the study's user attribute `ablation` (the knob changed at each step and the trials of its
seeds); accuracy and time come from those trials. The step was chosen on validation accuracy; test accuracy
is shown beside it, never used to choose.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.table import NotEnoughData, trials_table

METRICS = ("val_accuracy", "accuracy", "train_time_s")


def ablation_path(table) -> pd.DataFrame:
    """step, change, setting, n, and for each metric its mean, low, high and method; `delta` is the change
    of mean validation accuracy from the step before."""
    table = trials_table(table)
    record = table.attrs.get("ablation")
    if not record:
        raise NotEnoughData("the ablation path needs a study of sensitivity ablate")
    by_number = table.set_index("number")
    rows, previous = [], None
    for i, step in enumerate(record["steps"]):
        trials = by_number.loc[by_number.index.intersection(step["trials"])]
        trials = trials[trials["outcome"].isin(("ok", "diverged"))]
        row = {"step": i, "change": _change(record, i), "framework": step["framework"],
               "setting": ", ".join(f"{k}={v}" for k, v in step["knobs"].items()), "n": len(trials)}
        for metric in METRICS:
            interval = mean_interval(trials[metric], metric)
            row.update({f"{metric}_mean": interval.mean, f"{metric}_low": interval.low,
                        f"{metric}_high": interval.high, f"{metric}_method": interval.method})
        row["delta"] = None if previous is None else row["val_accuracy_mean"] - previous
        previous = row["val_accuracy_mean"]
        rows.append(row)
    path = pd.DataFrame(rows)
    path.attrs.update(source=record["from"], target=record["to"], inert=record.get("inert", []),
                      seeds=record["seeds"])
    return path


def _change(record: dict, i: int) -> str:
    steps = record["steps"]
    if i == 0:
        return f"start: {record['from']}"
    knob, before, after = steps[i]["knob"], steps[i - 1], steps[i]
    if knob == "framework":
        return f"framework: {before['framework']} -> {after['framework']}"
    return f"{knob}: {before['knobs'][knob]} -> {after['knobs'][knob]}"


def plot_ablation(path: pd.DataFrame):
    """Validation and test accuracy (top) and train time (bottom) along the path, each with its interval."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

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
    inert = path.attrs.get("inert") or []
    title = f"Ablation path: {path.attrs.get('source')} to {path.attrs.get('target')}, n={path.attrs.get('seeds')} seeds"
    fig.update_layout(title=title + (f" (no effect here: {', '.join(inert)})" if inert else ""), height=640,
                      margin=dict(b=160))
    fig.update_xaxes(tickangle=-25, row=2, col=1)
    return fig
