"""What each default leaves on the table: per default (one panel each, on its own framework), one bar per role
(tuned, each knob alone, each knob's tuning risk) with its 95% interval, and the noise floor drawn
(`tables.tunability.tunability_rows`)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.figures.style import go, make_subplots
from sensitivity.analysis.tables.tunability import point_text, tunability_rows

TITLE = "What each default leaves on the table"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per default (semantics, dataset, tunability: the default's name, framework) and role
      ("tuned", "K alone", "tuning risk of K"): knob, kind (gain or risk), point (the chosen grid point, JSON),
      val_score (its mean validation accuracy over the selection seeds), estimate (mean over fresh seeds of test
      accuracy, chosen minus default, or tuned minus all but K; 0-1 scale), low and high (its paired t 95%
      interval; none under 3 seeds), noise_floor (95% half-width of two independent sets of the default's seeds),
      grid_points, selection_seeds, fresh_seeds, budget, same_as_reference (an exact 0: one configuration)
    """
    rows: pd.DataFrame


def compute(table) -> Info:
    return Info(tunability_rows(table))


def plot(result: Info):
    rows = result.rows
    defaults = list(dict.fromkeys(zip(rows["tunability"], rows["framework"], rows["dataset"], rows["semantics"])))
    fig = make_subplots(rows=1, cols=len(defaults), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"{name} on {framework}<br>({dataset}, {regime})"
                                        for name, framework, dataset, regime in defaults])
    for col, key in enumerate(defaults, start=1):
        part = rows[[k == key for k in zip(rows["tunability"], rows["framework"], rows["dataset"],
                                            rows["semantics"])]]
        estimate = part["estimate"].astype(float)
        high = (part["high"].astype(float) - estimate).fillna(0)
        low = (estimate - part["low"].astype(float)).fillna(0)
        hover = [f"{role}: {point_text(point)}<br>{e:+.3f}" + (f" [{lo:+.3f}, {hi:+.3f}]" if lo == lo else
                                                                " (no interval)")
                 + f"<br>val {v:.3f} on {s} selection seed(s); {n} fresh seeds"
                 for role, point, e, lo, hi, v, s, n in zip(part["role"], part["point"], estimate, part["low"],
                                                            part["high"], part["val_score"], part["selection_seeds"],
                                                            part["fresh_seeds"])]
        colours = np.where(part["kind"].eq("risk"), "#d62728", np.where(part["role"].eq("tuned"), "#1f77b4",
                                                                          "#2ca02c"))
        fig.add_trace(go.Bar(x=part["role"], y=estimate, marker_color=colours, name=key[0], showlegend=False,
                             error_y=dict(type="data", symmetric=False, array=high, arrayminus=low),
                             hovertext=hover, hoverinfo="text"), row=1, col=col)
        floor = float(part["noise_floor"].iloc[0])
        if floor == floor:
            for level in (floor, -floor):
                fig.add_hline(y=level, line=dict(color="grey", dash="dash", width=1), row=1, col=col)
    first = rows.iloc[0]
    cut = pd.to_numeric(rows["budget_scale"], errors="coerce").min()
    fig.update_yaxes(title_text="test accuracy difference", col=1)
    fig.update_layout(
        height=560, width=max(700, 380 * len(defaults)),
        title=dict(text="What each default leaves on the table<br><sub>selected configuration minus default (tuning "
                        "risk: tuned minus all but that knob), 95% intervals; dashed: the noise floor<br>"
                        f"{first['grid_points']}-point grid, {first['selection_seeds']} selection seed(s), "
                        f"{first['fresh_seeds']} fresh seeds paired by seed; optimizer alone keeps the default's lr"
                        + (f"<br>budget cut to {cut:.2g} of the published epochs: early learning" if cut < 1 - 1e-6
                           else "") + "</sub>", y=0.97),
        margin=dict(t=170, b=120))
    return fig
