"""The figure of `sensitivity importance --out`: one panel per framework, each parameter's indices with their
intervals drawn (S1 and ST on a Saltelli design, mu* on a Morris one; fANOVA and PED-ANOVA, no interval,
on a study without a design), from the command's JSON record."""
from __future__ import annotations


def _bars(record: dict) -> list:
    """(index label, {parameter: [est, low, high]}) of one framework's record."""
    params = record.get("parameters") or {}
    kinds = [("first", "S1 (alone)"), ("total", "ST (with interactions)"), ("mu_star", "mu* (Morris)"),
             ("fanova", "fANOVA"), ("ped_anova", "PED-ANOVA")]
    out = []
    for key, label in kinds:
        values = {name: (v[key] if isinstance(v[key], list) else [v[key], None, None])
                  for name, v in params.items() if key in v}
        if values:
            out.append((label, values))
    return out


def plot_indices(record: dict, title: str):
    """A plotly figure of an importance record (`analysis.designed.importance_record` or
    `analysis.plain_importance.plain_importance`)."""
    # lazy: plotly
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    groups = record.get("per_framework") or record.get("per_group") or {}
    names = list(groups) or ["-"]
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[
        f"{g}: {'settled' if groups[g].get('settled') else 'not settled' if 'settled' in groups[g] else 'no design'}"
        for g in names], shared_yaxes=True)
    colours = {"S1 (alone)": "#4c78a8", "ST (with interactions)": "#f58518", "mu* (Morris)": "#54a24b",
               "fANOVA": "#b279a2", "PED-ANOVA": "#9d755d"}
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


def plot_interactions(record: dict, title: str):
    """One heat map per framework of a Saltelli design's second-order indices: S2 of each pair of factors (the
    share of the variance the pair explains jointly, beyond each one's S1), its interval in the cell's text."""
    # lazy: plotly
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

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
