"""The report's designed sensitivity study (`sweep --design`, read by `analysis.designed`): per framework the
parameter that matters most by the design's ranking index, with its interval and whether the ranking is settled,
the differences between frameworks, the indices figure and the interaction heat map (issue 30)."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.rankings.designed import difference_verdict
from sensitivity.analysis.claims.sensitivity import interaction_note
from sensitivity.analysis.report.html import figure_html, missing_html, note_html, table_html
from sensitivity.analysis.figures.indices import plot_indices, plot_interactions

INDEX = {"sobol": ("total", "ST (with interactions)"), "morris": ("mu_star", "mu* (Morris)")}
KIND = {"sobol": "A Saltelli (Sobol' indices)", "morris": "A Morris"}


def _interval(triple) -> str:
    return f"{triple[0]:.3f} [{triple[1]:.3f}, {triple[2]:.3f}]"


def designed_html(name: str, record: dict) -> str:
    """The section's part for designed study `name` (`designed.importance_record`)."""
    design = record["design"]
    key, label = INDEX[design["kind"]]
    seeds = ("one seed a point, so seed noise enters the indices" if design["seeds"] == 1 else
             f"the mean of {design['seeds']} seeds a point")
    parts = [f"<h3>Designed study {html.escape(name)}: which parameter matters, per framework</h3>", note_html(
        f"{KIND[design['kind']]} design of {design['points']} points per framework over "
        f"{', '.join(p['name'] for p in design['params'])}; objective {record['objective']}; {seeds}. Ranked by "
        f"{label}; intervals are SALib's 95% bootstrap (conservative on this design). A ranking is settled when "
        "its top parameter leads in at least 90% of resamples and its interval lies above the second's.")]
    rows = []
    for framework, r in record["per_framework"].items():
        if "parameters" not in r:
            rows.append({"framework": framework, "top parameter": "", label: "", "settled": "no", "why": r["why"]})
            continue
        top = r.get("top") or max(r["parameters"], key=lambda p: r["parameters"][p][key][0])
        rows.append({"framework": framework, "top parameter": top, label: _interval(r["parameters"][top][key]),
                     "settled": "yes" if r["settled"] else "no", "why": r["why"]})
    parts.append(table_html(pd.DataFrame(rows)))
    interacting = interaction_note(record)
    if interacting:
        parts.append(note_html(interacting))
    differences = [{"frameworks": f"{pair.split('-', 1)[0]} minus {pair.split('-', 1)[1]}", "parameter": parameter,
                    label: f"{est:+.3f} [{low:+.3f}, {high:+.3f}]",
                    "verdict": difference_verdict(*pair.split("-", 1), low, high)}
                   for pair, params in record.get("differences", {}).items()
                   for parameter, (est, low, high) in params.items()]
    if differences:
        parts.append(note_html(f"Differences of {label} between frameworks, each design trained apart: est -/+ "
                               "the root of the two half-widths squared."))
        parts.append(table_html(pd.DataFrame(differences)))
    kind = "Sobol'" if design["kind"] == "sobol" else "Morris"
    parts.append(figure_html(plot_indices(record, f"{name}: {kind} indices of {record['objective']} per framework"),
                             "designed-indices"))
    if design["kind"] == "sobol":
        try:
            parts.append(figure_html(plot_interactions(record, f"{name}: second-order indices (S2) per framework"),
                                     "designed-interactions"))
            negative = [f"{framework} {pair} {_interval(e)}" for framework, r in record["per_framework"].items()
                        for pair, e in (r.get("interactions") or {}).items() if e[0] < 0]
            if negative:
                parts.append(note_html(f"{len(negative)} S2 estimate(s) below 0 ({'; '.join(negative)}), drawn as 0: "
                                       "an index is at least 0, so a negative estimate is the design's sampling "
                                       "error, and its interval says how large that error is."))
        except ValueError as reason:
            parts.append(missing_html(str(reason)))
    return "".join(parts)
