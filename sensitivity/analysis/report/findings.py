"""The report's Findings, at the top of the page: each claim's verdict and headline per regime with its details
folded, the designed studies' sensitivity claims, the findings figure and every comparison behind them. The words
are the claims' (`analysis.claims`); the HTML is the report's."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.claims.findings import findings
from sensitivity.analysis.claims.sensitivity import sensitivity_claims
from sensitivity.analysis.figure_table import findings_figure_info
from sensitivity.analysis.figures import findings as findings_figure
from sensitivity.analysis.report.html import figure_html, missing_html, note_html, table_html
from sensitivity.analysis.statistics import ALPHA, EFFECT
from sensitivity.analysis.table import REGIME, NotEnoughData, regimes_of


def _item(verdict: str, claim: str, headline: str, anchor: str, details: str, rows=None) -> str:
    """One claim of the Findings: its verdict badge, its line, a link to its figure, its table (one row per
    subject compared, where the claim has one), its details folded."""
    shown = table_html(pd.DataFrame(rows)) if isinstance(rows, list) and rows else ""
    return (f'<li><span class="verdict {verdict.replace(" ", "-")}">{html.escape(verdict)}</span>'
            f'<strong>{html.escape(claim)}</strong>: {html.escape(headline)} <a href="#{anchor}">figure</a>'
            f'{shown}<details><summary>details</summary>{html.escape(details)}</details></li>')


def findings_html(table: pd.DataFrame, others=(), designed=()) -> str:
    """The Findings section: the claims of the studies' data, then the sensitivity claims of each designed study
    of `designed` ([(name, `designed.importance_record`)])."""
    found = findings(table, others)
    claims, comparisons = found.claims, found.comparisons
    studies = ", ".join(str(s.attrs.get("study", "a trial table")) for s in [table, *others])
    effect = comparisons.attrs.get("effect", EFFECT)
    parts = [f"<p><strong>{html.escape(found.summary)}</strong></p>" if found.summary else "", note_html(
        f"What the data of {studies} says about each claim, per regime. Each comparison is a difference of means "
        "over seeds (accuracy over converged runs; diverged runs counted apart, with Fisher's exact test) with its "
        "95% interval, which includes the test set's sampling error where the trials recorded per-sample correctness "
        f"(the transfer studies); p-values are Holm-corrected within each claim and regime. A comparison is an "
        f"effect at Holm "
        f"p < {ALPHA:g} and equivalent where two one-sided tests put it within the claim's margin ({effect:g} of "
        f"accuracy a dataset; {2 * effect:g} for a home advantage, which sums two datasets). The transfer claims are "
        "judged on runs at the published budget only: dataset transfer by the summary of its crossovers, framework "
        "transfer per default (a default that loses on a target under both definitions of the budget supports it; "
        "every default equivalent does not), with the seeds that would settle it (planned with the SD's 80% upper "
        "bound). The seed is the unit: degrees of freedom come from the seeds alone; under 3 seeds a side, or with "
        "no spread, there is no interval and the test is an exact one over the seeds, and a comparison it cannot "
        "decide is not testable. Robustness compares each framework's own default at matched clean accuracy on a "
        "surrogate's examples; the canonical regime checks the pipeline against a tolerance declared before any "
        "attack.")]
    for regime in regimes_of(claims):
        items = [_item(row["verdict"], row["claim"], row["headline"], row["anchor"], row["sentence"], row.get("table"))
                 for row in claims[claims[REGIME].eq(regime)].to_dict("records")]
        parts.append(f"<h3>Regime {html.escape(regime)}</h3><ul class=\"findings\">{''.join(items)}</ul>")
    for name, record in designed:
        items = [_item(c["verdict"], c["claim"], c["headline"], "importance", c["details"])
                 for c in sensitivity_claims(name, record)]
        parts.append(f"<h3>Sensitivity: designed study {html.escape(name)}</h3><ul class=\"findings\">{''.join(items)}"
                     "</ul>")
    try:
        parts.append(figure_html(findings_figure.plot(findings_figure_info(found)), "findings"))
    except NotEnoughData as reason:
        parts.append(missing_html(str(reason)))
    listed = [f"<li>[{html.escape(r[REGIME])}, {html.escape(r['claim'])}] {html.escape(r['sentence'])}</li>"
              for r in comparisons.to_dict("records")]
    if listed:
        parts.append(f"<details><summary>All {len(listed)} comparisons behind these claims</summary>"
                     f"<ul class=\"findings\">{''.join(listed)}</ul></details>")
    return "".join(parts)
