"""The Findings' forest plot: each comparison's difference with its 95% interval, one row of panels per claim and
one column per regime, each claim's margin shaded around zero. Its data is handed over by the figure table
(`analysis.figure_table`), which reads the claims: a figure imports no claim."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.style import finish, go, make_subplots, regime_title
from sensitivity.analysis.table import REGIME, NotEnoughData, regimes_of

TITLE = "Findings"  # the heading of its report section

VERDICT_COLOURS = {"lower": "#d62728", "higher": "#2ca02c", "equivalent": "#1f77b4", "inconclusive": "#7f7f7f",
                   "cut budget": "#bcbd22"}


class Info(NamedTuple):
    """Fields:
    - claims: one row per regime and claim of the Findings, in their order (the fields of `claims.base.Verdict`;
      `margin`: its margin of equivalence, shaded)
    - comparisons: one row per comparison of the Findings (`claims.base.Comparison.RECORD`, then detail)
    - units: {claim: what its comparisons' difference is, the x axis}
    """
    claims: pd.DataFrame
    comparisons: pd.DataFrame
    units: dict


def plot(info: Info):
    """A forest plot of the comparisons: difference and 95% interval, one row of panels per claim, one column per
    regime; each claim's margin shaded around zero; hollow where there is no interval."""
    frame = info.comparisons
    shown = frame[frame["unit"].ne("frontier") & frame["estimate"].notna()]
    if shown.empty:
        raise NotEnoughData("findings need comparisons: run sensitivity transfer, crossover, robustness, or a sweep "
                            "of two or more frameworks")
    claims = [c for c in dict.fromkeys(info.claims["claim"]) if c in set(shown["claim"])]
    margins = info.claims.drop_duplicates("claim").set_index("claim")["margin"]
    regimes = regimes_of(shown)
    sizes = [max(1, shown.loc[shown["claim"].eq(c), "label"].nunique()) for c in claims]
    height = 160 + 26 * sum(sizes) + 120 * len(claims)
    fig = make_subplots(rows=len(claims), cols=len(regimes), row_heights=sizes, shared_yaxes=True,
                        vertical_spacing=min(0.9 / max(1, len(claims) - 1), 110 / (height - 190)),
                        horizontal_spacing=0.03,
                        subplot_titles=[f"{c}, {r}" for c in claims for r in regimes])
    for i, claim in enumerate(claims, start=1):
        labels = list(dict.fromkeys(shown[shown["claim"].eq(claim)]["label"]))
        for j, regime in enumerate(regimes, start=1):
            part = shown[shown["claim"].eq(claim) & shown[REGIME].eq(regime)]
            for has, points in part.groupby(part["low"].notna()):  # no error bar where there is no interval
                error = dict(type="data", symmetric=False, array=points["high"].astype(float) - points["estimate"],
                             arrayminus=points["estimate"] - points["low"].astype(float)) if has else None
                fig.add_trace(go.Scatter(
                    x=points["estimate"], y=points["label"], mode="markers", showlegend=False, error_x=error,
                    marker=dict(size=9, color=points["verdict"].map(VERDICT_COLOURS).fillna("#7f7f7f"),
                                symbol="circle" if has else "circle-open", line=dict(width=2)),
                    hovertext=points["sentence"], hoverinfo="text"), row=i, col=j)
            margin = float(margins[claim])
            fig.add_vrect(x0=-margin, x1=margin, fillcolor="#1f77b4", opacity=0.1, line_width=0, row=i, col=j)
            fig.add_vline(x=0, line=dict(color="black", width=1), row=i, col=j)
        fig.update_yaxes(automargin=True, categoryorder="array", categoryarray=labels[::-1], row=i, col=1)
        fig.update_xaxes(title=dict(text=info.units[claim], font=dict(size=11)), row=i)
    fig.update_xaxes(zeroline=False)
    title = regime_title("Findings: each comparison's difference and 95% interval", regimes)
    fig = finish(fig, title + "<br><sub>red: lower; green: higher; blue: equivalent, within the shaded margin; "
                              "grey: inconclusive; olive: cut budget, not tested; hollow: under 3 seeds</sub>", height)
    return fig.update_layout(margin=dict(t=130))
