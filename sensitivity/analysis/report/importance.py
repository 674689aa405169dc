"""The report's importance section: each designed study's indices first (which parameter matters, per framework,
settled or not, the differences between frameworks, the indices and interactions figures), then fANOVA and
PED-ANOVA over the study's sampled trials with their intervals, agreement and warnings, and the planned trials
left out of them."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.claims.sensitivity import interaction_note
from sensitivity.analysis.figures import designed_indices as indices_figure
from sensitivity.analysis.figures import designed_interactions as interactions_figure
from sensitivity.analysis.figures import importance as importance_figure
from sensitivity.analysis.intervals import interval_text
from sensitivity.analysis.rankings.designed import difference_verdict
from sensitivity.analysis.rankings.importance import ALL as ALL_TRIALS
from sensitivity.analysis.rankings.importance import (FANOVA_RESAMPLES, LABELS, RESAMPLES, TRIALS_PER_PARAMETER,
                                                      parameter_importance, planned_trials)
from sensitivity.analysis.report.html import figure_html, missing_html, note_html, regime_html, table_html, warning_html
from sensitivity.analysis.table import REGIME
from sensitivity.studies.trial_rows import cached_beside


def importance_html(table: pd.DataFrame) -> str:
    """The importance section; the importance of a study's table is cached beside it (`trial_rows.cached_beside`):
    a report of the study unchanged since reads it back, without fitting the evaluators or importing scikit-learn."""
    found = cached_beside(table, "importance", lambda: parameter_importance(table))
    importance = found.rows
    regimes = importance[importance[REGIME].ne(ALL_TRIALS)]
    extra = "; and all trials, the regime a parameter" if importance[REGIME].eq(ALL_TRIALS).any() else ""
    planned = found.planned
    parts = [regime_html(regimes, extra), note_html(
        f"Over the sampled trials only ({planned} planned trials, framework defaults, left out and listed below). "
        f"Intervals are 95% bootstrap intervals over trials: PED-ANOVA re-run on {RESAMPLES} resamples, fANOVA's "
        f"forest refitted on {FANOVA_RESAMPLES}. A ranking needs at least {TRIALS_PER_PARAMETER} sampled "
        "trials per parameter.")]
    parts += [warning_html(f"{block}: {text}") for block, text in found.warnings]
    parts.append(figure_html(importance_figure.plot(found), "importance"))
    agreement = found.agreement
    for block, rows in importance.groupby(REGIME, sort=False):
        rows = rows.assign(cell=[f"{v:.3f} [{lo:.3f}, {hi:.3f}] rank {r}" if lo == lo else f"{v:.3f} rank {r}"
                                 for v, lo, hi, r in zip(rows["importance"], rows["low"], rows["high"], rows["rank"])])
        ranks = rows.pivot(index="parameter", columns="evaluator", values="cell").rename(columns=LABELS)
        order = rows.sort_values("rank").drop_duplicates("parameter")["parameter"]
        ranks = ranks.reindex(order).rename_axis(columns=None).reset_index()
        defaults = rows.drop_duplicates("parameter").set_index("parameter")["defaults"]
        ranks["framework defaults"] = ranks["parameter"].map(defaults).fillna("").where(
            ranks["parameter"].ne("framework"), "")
        title = "All trials, the regime a parameter" if block == ALL_TRIALS else f"Regime {block}"
        agree = agreement[agreement[REGIME].eq(block)] if len(agreement) else agreement
        rank_note = "" if agree.empty or agree.iloc[0]["spearman"] != agree.iloc[0]["spearman"] else (
            f"; rank agreement of fANOVA and PED-ANOVA: Spearman {agree.iloc[0]['spearman']:.2f}, Kendall "
            f"{agree.iloc[0]['kendall']:.2f} over {int(agree.iloc[0]['n_parameters'])} parameters")
        used = found.subsample.get(block)
        n = f"a random subsample of {used[0]} of {used[1]}" if used else f"n={rows['n_trials'].max()}"
        verdicts = _verdicts_sentence(found.verdicts.get(block, {}))
        parts.append(f"<h3>{html.escape(title)} ({n} sampled trials{html.escape(rank_note)})"
                     f"</h3>" + (note_html(verdicts) if verdicts else "") + table_html(ranks))
    parts += [missing_html(f"{block}: {reason}") for block, reason in found.missing.items()]
    listed = planned_trials(table)
    if len(listed):
        listed = listed.assign(accuracy=[interval_text(m, lo, hi, n) for m, lo, hi, n in zip(
            listed["accuracy_mean"], listed["accuracy_low"], listed["accuracy_high"], listed["accuracy_n"])])
        parts.append(f"<h3>Planned trials, not in the importance ({planned} trials)</h3>"
                     + table_html(listed[["framework", REGIME, "configuration", "accuracy"]]))
    return "".join(parts)


def _verdicts_sentence(verdicts: dict) -> str:
    """Whether each evaluator's ranking is settled, fANOVA's first (the ranking of a study without a design)."""
    said = []
    for evaluator in ("fanova", "ped_anova"):
        v = verdicts.get(evaluator)
        if v:
            state = "settled" if v["settled"] else "not settled"
            said.append(f"{LABELS[evaluator]}'s ranking is {state}: {v['why']}"
                        + (f" ({v['resamples']} bootstrap resamples)" if v["resamples"] else ""))
    return ". ".join(said) + "." if said else ""


def _interval(triple) -> str:
    return f"{triple[0]:.3f} [{triple[1]:.3f}, {triple[2]:.3f}]"


def designed_html(name: str, record: dict) -> str:
    """The section's part for designed study `name` (`designed.importance_record`)."""
    design, ranking = record["design"], record["ranking"]
    key, label = ranking["key"], ranking["label"]
    seeds = ("one seed a point, so seed noise enters the indices" if design["seeds"] == 1 else
             f"the mean of {design['seeds']} seeds a point")
    parts = [f"<h3>Designed study {html.escape(name)}: which parameter matters, per framework</h3>", note_html(
        f"{ranking['article']} design of {design['points']} points per framework over "
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
    within = [{"framework": framework, "optimizer": level, "parameter": name, "S1": _interval(v["first"]),
               "ST": _interval(v["total"]), "settled": "yes" if lr["settled"] else "no"}
              for framework, r in record["per_framework"].items() if r.get("within")
              for level, lr in r["within"]["levels"].items() for name, v in lr.get("parameters", {}).items()]
    if within:
        first = next(r["within"] for r in record["per_framework"].values() if r.get("within"))
        closed = "; ".join(f"{framework} {_interval(r['within']['closed'])}"
                           for framework, r in record["per_framework"].items() if r.get("within"))
        parts.append(note_html(f"Within each {first['given']}, the remaining parameters ranked by ST: {first['how']}. "
                               f"The closed index of {{{', '.join(first['group'])}}}, the share the two explain "
                               f"together with their interaction: {closed}."))
        parts.append(table_html(pd.DataFrame(within)))
    differences = [{"frameworks": f"{pair.split('-', 1)[0]} minus {pair.split('-', 1)[1]}", "parameter": parameter,
                    label: f"{est:+.3f} [{low:+.3f}, {high:+.3f}]",
                    "verdict": difference_verdict(*pair.split("-", 1), low, high)}
                   for pair, params in record.get("differences", {}).items()
                   for parameter, (est, low, high) in params.items()]
    if differences:
        parts.append(note_html(f"Differences of {label} between frameworks, each design trained apart: est -/+ "
                               "the root of the two half-widths squared."))
        parts.append(table_html(pd.DataFrame(differences)))
    kind = ranking["title"]
    parts.append(figure_html(indices_figure.plot(indices_figure.Info(
        record, f"{name}: {kind} indices of {record['objective']} per framework")), "designed-indices"))
    if ranking["interactions"]:
        try:
            parts.append(figure_html(interactions_figure.plot(indices_figure.Info(
                record, f"{name}: second-order indices (S2) per framework")), "designed-interactions"))
            negative = [f"{framework} {pair} {_interval(e)}" for framework, r in record["per_framework"].items()
                        for pair, e in (r.get("interactions") or {}).items() if e[0] < 0]
            if negative:
                parts.append(note_html(f"{len(negative)} S2 estimate(s) below 0 ({'; '.join(negative)}), drawn as 0: "
                                       "an index is at least 0, so a negative estimate is the design's sampling "
                                       "error, and its interval says how large that error is."))
        except ValueError as reason:
            parts.append(missing_html(str(reason)))
    return "".join(parts)
