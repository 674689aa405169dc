"""The ablation path: validation and test accuracy and train time at each step from one set-up to another
(`tables.ablation.ablation_path`, whose `Ablation` is this figure's data)."""
from __future__ import annotations

from sensitivity.analysis.figures.style import go, make_subplots
from sensitivity.analysis.tables.ablation import Ablation, ablation_path

TITLE = "Ablation path between set-ups"  # the heading of its report section

Info = Ablation
compute = ablation_path


def plot(result: Ablation):
    """Validation and test accuracy (top) and train time (bottom) along the path, each with its interval."""
    path = result.rows

    labels = [f"{i}. {c}" for i, c in zip(path["step"], path["change"])]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=("Accuracy: mean, 95% interval (n=2: the range); chosen on validation",
                                        "Train time (s)"))
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
