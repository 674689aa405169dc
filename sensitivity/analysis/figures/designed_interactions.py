"""The interactions of a Saltelli design (`sweep --design sobol`): per framework, the second-order index S2 of each
pair of factors with its interval (`rankings.designed.importance_record`)."""
from __future__ import annotations

from sensitivity.analysis.figures.designed_indices import Info
from sensitivity.analysis.figures.style import go, make_subplots
from sensitivity.analysis.rankings.designed import designed_importance, importance_record

TITLE = "Designed study: interactions"  # the heading of its report section

READS = "study"  # the design is the study's own attribute, not the trial table's


def compute(study) -> Info:
    return Info(importance_record(designed_importance(study)),
                f"{study.study_name}: second-order indices (S2) per framework")


def plot(info: Info):
    """One heat map per framework of a Saltelli design's second-order indices: S2 of each pair of factors (the
    share of the variance the pair explains jointly, beyond each one's S1), its interval in the cell's text."""
    record, title = info
    groups = {g: r for g, r in (record.get("per_framework") or {}).items() if r.get("interactions")}
    if not groups:
        raise ValueError("no second-order indices: they need a Saltelli design whose every point has a value")
    fig = make_subplots(rows=1, cols=len(groups), subplot_titles=list(groups), horizontal_spacing=0.08)
    for col, (group, r) in enumerate(groups.items(), start=1):
        names = list(r["parameters"])
        z = [[None] * len(names) for _ in names]
        text = [[""] * len(names) for _ in names]
        for pair, (est, low, high) in r["interactions"].items():
            a, b = pair.split(":", 1)
            i, j = names.index(a), names.index(b)
            z[j][i] = est
            text[j][i] = f"{est:.2f}<br>[{low:.2f}, {high:.2f}]"
        fig.add_trace(go.Heatmap(z=z, x=names, y=names, text=text, texttemplate="%{text}", zmin=0, zmax=1,
                                 colorscale="Blues", showscale=col == len(groups), hoverongaps=False,
                                 colorbar=dict(title="S2")), row=1, col=col)
        fig.update_yaxes(autorange="reversed", row=1, col=col)
    return fig.update_layout(title=title, template="plotly_white", height=420)
