"""The indices of a designed study (`sweep --design`), and the figure of `sensitivity importance --out`: one panel
per framework, each parameter's indices with their intervals drawn (S1 and ST on a Saltelli design, mu* on a
Morris one; on a study without a design, the given-data or surrogate S1, fANOVA and PED-ANOVA with theirs), from an importance record
(`rankings.designed.importance_record`, or `rankings.plain.plain_importance`'s)."""
from __future__ import annotations

from typing import NamedTuple

from sensitivity.analysis.figures.style import go, make_subplots
from sensitivity.analysis.rankings.designed import designed_importance, importance_record

TITLE = "Designed study: indices"  # the heading of its report section

READS = "study"  # the design is the study's own attribute, not the trial table's


class Info(NamedTuple):
    """Fields:
    - record: the importance record: its design, objective and per framework (or group) each parameter's indices
      [estimate, low, high], whether the ranking is settled, and the second-order indices
    - title: the figure's title
    """
    record: dict
    title: str


def compute(study) -> Info:
    record = importance_record(designed_importance(study))
    return Info(record, f"{study.study_name}: {record['ranking']['title']} indices of {record['objective']} per "
                        "framework")


def _bars(record: dict) -> list:
    """(index label, {parameter: [est, low, high]}) of one framework's record."""
    params = record.get("parameters") or {}
    kinds = [("first", "S1 (alone)"), ("total", "ST (with interactions)"), ("mu_star", "mu* (Morris)"),
             ("rbd_fast", "S1 (RBD-FAST)"), ("delta_s1", "S1 (SALib delta's bins)"),
             ("surrogate", "S1 (surrogate on a prior design)"), ("fanova", "fANOVA"), ("ped_anova", "PED-ANOVA")]
    out = []
    for key, label in kinds:
        values = {name: (v[key] if isinstance(v[key], list) else [v[key], None, None])
                  for name, v in params.items() if key in v}
        if values:
            out.append((label, values))
    return out


def plot(info: Info):
    """The record's indices, a panel per framework (or group), with their intervals."""
    record, title = info
    groups = record.get("per_framework") or record.get("per_group") or {}
    names = list(groups) or ["-"]
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[
        f"{g}: {'settled' if groups[g].get('settled') else 'not settled' if 'settled' in groups[g] else 'no design'}"
        for g in names], shared_yaxes=True)
    colours = {"S1 (alone)": "#4c78a8", "ST (with interactions)": "#f58518", "mu* (Morris)": "#54a24b",
               "fANOVA": "#b279a2", "PED-ANOVA": "#9d755d", "S1 (RBD-FAST)": "#4c78a8",
               "S1 (SALib delta's bins)": "#72b7b2", "S1 (surrogate on a prior design)": "#e45756"}
    for col, group in enumerate(names, start=1):
        for label, values in _bars(groups.get(group, {})):
            xs = list(values)
            est = [values[x][0] for x in xs]
            has = all(values[x][1] is not None for x in xs)
            error = dict(type="data", symmetric=False, array=[values[x][2] - values[x][0] for x in xs],
                         arrayminus=[values[x][0] - values[x][1] for x in xs]) if has else None
            fig.add_trace(go.Bar(x=xs, y=est, name=label, marker_color=colours[label], error_y=error,
                                 legendgroup=label, showlegend=col == 1), row=1, col=col)
    fig.update_layout(title=title, barmode="group", yaxis_title="index (95% interval where drawn)",
                      template="plotly_white")
    ends = [v for trace in fig.data for v in [*(trace.y or ()), *(_ends(trace))]]
    if ends and (min(ends) < AXIS[0] or max(ends) > AXIS[1]):  # a share is in [0, 1]: wider intervals cut
        fig.update_yaxes(range=list(AXIS))
        fig.update_layout(title=f"{title} (intervals cut at {AXIS[0]} and {AXIS[1]})")
    return fig


AXIS = (-0.25, 1.25)


def _ends(trace) -> list:
    error = trace.error_y
    if error is None or error.array is None:
        return []
    return [y + up for y, up in zip(trace.y, error.array)] + [y - down for y, down in zip(trace.y, error.arrayminus)]
