"""The report's sections about the studies' claims, as HTML: the findings (at the top of the page),
importance, transfer of defaults and robustness. Each reads its data through the analysis functions and says
what it rests on: regimes, seeds, intervals, budget."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.tables.crossover import NEEDS, crossover_comparisons
from sensitivity.analysis.claims.sensitivity import sensitivity_claims
from sensitivity.analysis.figures.results import Importance, Robustness, Transfer
from sensitivity.analysis.claims.findings import ALPHA, EFFECT, findings
from sensitivity.analysis.rankings.importance import (ALL as ALL_TRIALS, FANOVA_RESAMPLES, LABELS, RESAMPLES,
                                             TRIALS_PER_PARAMETER, parameter_importance, planned_trials)
from sensitivity.analysis.intervals import interval_text
from sensitivity.analysis.report.html import figure_html, missing_html, note_html, regime_html, table_html, warning_html
from sensitivity.analysis.figures import (plot_crossover, plot_findings, plot_importance, plot_robustness,
                                       plot_transfer)
from sensitivity.analysis.tables.robustness import robustness_checks
from sensitivity.analysis.tables.robustness_pairs import protocol_of, robustness_comparisons
from sensitivity.analysis.table import REGIME, NotEnoughData, regime_sorted, regimes_of
from sensitivity.analysis.tables.transfer import budget_note, richest_transfer, transfer_comparisons
from sensitivity.studies.trial_rows import cached_beside


def _origin(source, sources) -> str:
    label = source.attrs.get("study")
    return note_html(f"From study {label}.") if source is not sources[0] and label else ""


def _item(verdict: str, claim: str, headline: str, anchor: str, details: str) -> str:
    """One claim of the Findings: its verdict badge, its line, a link to its figure, its details folded."""
    return (f'<li><span class="verdict {verdict.replace(" ", "-")}">{html.escape(verdict)}</span>'
            f'<strong>{html.escape(claim)}</strong>: {html.escape(headline)} <a href="#{anchor}">figure</a>'
            f'<details><summary>details</summary>{html.escape(details)}</details></li>')


def findings_html(table: pd.DataFrame, others=(), designed=()) -> str:
    """The Findings section: the claims of the studies' data, then the sensitivity claims of each designed study
    of `designed` ([(name, `designed.importance_record`)])."""
    found = findings(table, others)
    claims, comparisons = found.claims, found.comparisons
    studies = ", ".join(str(s.attrs.get("study", "a trial table")) for s in [table, *others])
    effect = comparisons.attrs.get("effect", EFFECT)
    parts = [note_html(
        f"What the data of {studies} says about each claim, per regime. Each comparison is a difference of means "
        "over seeds (accuracy over converged runs; diverged runs counted apart, with Fisher's exact test) with its "
        "95% interval, which includes the test set's sampling error where the trials recorded per-sample correctness "
        f"(the transfer studies); p-values are Holm-corrected within each claim. A comparison is an effect at Holm "
        f"p < {ALPHA:g} and equivalent where two one-sided tests put it within the claim's margin ({effect:g} of "
        f"accuracy a dataset; {2 * effect:g} for a home advantage, which sums two datasets). The transfer claims are "
        "judged on runs at the published budget only, by the summary of their comparisons (framework transfer: "
        "their mean as one contrast of the arms, a shared home arm counted once): supported where it lies in the "
        "claimed direction, not supported where it is equivalent to 0, inconclusive otherwise, with the seeds that "
        "would settle it (planned with the SD's 80% upper bound). The seed is the unit: degrees of freedom come "
        "from the seeds alone; under 3 seeds a side, or with no spread, there is no interval and the test is an "
        "exact one over the seeds, and a comparison it cannot decide is not testable. Robustness compares the same "
        "configuration on two frameworks against the canonical control on the same pair.")]
    for regime in regimes_of(claims):
        items = [_item(row["verdict"], row["claim"], row["headline"], row["anchor"], row["sentence"])
                 for row in claims[claims[REGIME].eq(regime)].to_dict("records")]
        parts.append(f"<h3>Regime {html.escape(regime)}</h3><ul class=\"findings\">{''.join(items)}</ul>")
    for name, record in designed:
        items = [_item(c["verdict"], c["claim"], c["headline"], "importance", c["details"])
                 for c in sensitivity_claims(name, record)]
        parts.append(f"<h3>Sensitivity: designed study {html.escape(name)}</h3><ul class=\"findings\">{''.join(items)}"
                     "</ul>")
    try:
        parts.append(figure_html(plot_findings(found), "findings"))
    except NotEnoughData as reason:
        parts.append(missing_html(str(reason)))
    listed = [f"<li>[{html.escape(r[REGIME])}, {html.escape(r['claim'])}] {html.escape(r['sentence'])}</li>"
              for r in comparisons.to_dict("records")]
    if listed:
        parts.append(f"<details><summary>All {len(listed)} comparisons behind these claims</summary>"
                     f"<ul class=\"findings\">{''.join(listed)}</ul></details>")
    return "".join(parts)


def importance_html(table: pd.DataFrame) -> str:
    """The importance section; the importance of a study's table is cached beside it (`trial_rows.cached_beside`):
    a report of the study unchanged since reads it back, without fitting the evaluators or importing scikit-learn."""
    importance = cached_beside(table, "importance", lambda: parameter_importance(table))
    regimes = importance[importance[REGIME].ne(ALL_TRIALS)]
    extra = "; and all trials, the regime a parameter" if importance[REGIME].eq(ALL_TRIALS).any() else ""
    planned = importance.attrs.get("planned", 0)
    parts = [regime_html(regimes, extra), note_html(
        f"Over the sampled trials only ({planned} planned trials, framework defaults, left out and listed below). "
        f"Intervals are 95% bootstrap intervals over trials: PED-ANOVA re-run on {RESAMPLES} resamples, fANOVA's "
        f"forest refitted on {FANOVA_RESAMPLES}. A ranking needs at least {TRIALS_PER_PARAMETER} sampled "
        "trials per parameter.")]
    parts += [warning_html(f"{block}: {text}") for block, text in importance.attrs.get("warnings", [])]
    parts.append(figure_html(_plot_importance(importance), "importance"))
    agreement = pd.DataFrame(importance.attrs.get("agreement") or [])
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
        used = importance.attrs.get("subsample", {}).get(block)
        n = f"a random subsample of {used[0]} of {used[1]}" if used else f"n={rows['n_trials'].max()}"
        verdicts = _verdicts_sentence(importance.attrs.get("verdicts", {}).get(block, {}))
        parts.append(f"<h3>{html.escape(title)} ({n} sampled trials{html.escape(rank_note)})"
                     f"</h3>" + (note_html(verdicts) if verdicts else "") + table_html(ranks))
    parts += [missing_html(f"{block}: {reason}") for block, reason in importance.attrs.get("missing", {}).items()]
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


def _plot_importance(importance):
    return plot_importance(Importance.of(importance))


def transfer_html(sources: list) -> str:
    """Dataset transfer as crossovers, then framework transfer from the richest transfer study; NotEnoughData
    where the studies hold neither."""
    parts, reasons = [], []
    for part in (_crossover_html, _frameworks_html):
        try:
            parts.append(part(sources))
        except NotEnoughData as reason:
            reasons.append(str(reason))
    if not parts:
        raise NotEnoughData("; ".join(reasons))
    return "".join(parts)


def _crossover_html(sources: list) -> str:
    """Every source's crossovers (a study of `sensitivity crossover` each, the placebo's among them)."""

    found = []
    for source in sources:
        try:
            found.append((source, crossover_comparisons(source)))
        except NotEnoughData:
            continue
    if not found:
        raise NotEnoughData(NEEDS)
    rows = pd.concat([r for _, r in found], ignore_index=True)
    parts = ["<h3>Across datasets: crossovers</h3>", regime_html(rows), note_html(
        "On one framework, the configuration tuned for dataset A and the one tuned for B (a published default, "
        "or the best of a sweep on that dataset's validation split, frozen before the crossover ran) each run on "
        "both datasets at its own budget, on fresh seeds. Home advantage: (A-tuned on A - B-tuned on A) + "
        "(B-tuned on B - A-tuned on B), test accuracy over converged runs (where every run of a cell diverged: "
        "the chance-level accuracy of the models it left), with a 95% interval that includes each test set's "
        "sampling error. A placebo crosses two disjoint halves of one dataset: it must show none.")]
    budget = budget_note(rows["budget_scale"])
    if budget:
        parts.append(warning_html(budget.strip(" ()").capitalize() + ": not tested at the published budget."))
    for index, (source, part) in enumerate(found):
        parts.append(_origin(source, sources) + figure_html(plot_crossover(part, source),
                                                            "crossover" if index == 0 else f"crossover-{index}"))
    shown = pd.DataFrame({REGIME: rows[REGIME], "crossover": [("placebo: " if p else "") + c for p, c in zip(
        rows["placebo"], rows["crossover"])], "tuned for A": rows["config_a"], "tuned for B": rows["config_b"],
        "accuracy (mean [95%] n, train time)": ["; ".join(f"{k}: {v}" for k, v in c.items()) for c in rows["cells"]],
        "home advantage [95%]": [_difference(r) for r in rows.to_dict("records")],
        "own configuration's train time, x the other's": [
            "-" if t is None or t != t else f"{t:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None else f"{t:.2f}"
            for t, lo, hi in zip(rows["time_ratio"], rows["time_low"], rows["time_high"])],
        "diverged": ["; ".join(f"{k}: {v}" for k, v in d.items()) for d in rows["diverged"]],
        "budget scale": rows["budget_scale"]})
    return "".join(parts) + table_html(shown)


def _frameworks_html(sources: list) -> str:
    source, cells = richest_transfer(sources)
    budget = budget_note(cells["budget_scale"])
    parts = ["<h3>Across frameworks</h3>", _origin(source, sources), regime_html(cells), note_html(
        "Every default on every framework (the matrix), and each default moved from its home framework to each "
        "other one against itself at home, same dataset, regime and budget (the pairs): test accuracy over converged "
        "runs, 95% intervals with the test set's sampling error. The canonical regime is the control: with the same "
        "formulas in every framework, what differs is numerics.")]
    if budget:
        parts.append(warning_html(budget.strip(" ()").capitalize() + ": these numbers measure early learning, not "
                                  "the defaults as published."))
    parts.append(figure_html(plot_transfer(Transfer.of(cells)), "transfer"))
    rows = transfer_comparisons(source)
    shown = pd.DataFrame({REGIME: rows[REGIME], "subject": rows["subject"], "accuracy": rows["subject_text"],
                          "against": rows["reference"], "its accuracy": rows["reference_text"],
                          "difference [95%], p (uncorrected; Holm in Findings)":
                              [_difference(r) for r in rows.to_dict("records")],
                          "diverged": [f"{a} of {n} vs {b} of {m}" for a, n, b, m in zip(
                              rows["diverged_a"], rows["runs_a"], rows["diverged_b"], rows["runs_b"])],
                          "budget scale": rows["budget_scale"]})
    parts.append(f"<h4>{html.escape('A default moved to another framework, against itself at home' + budget)}</h4>"
                 + table_html(shown, "no comparison: no default ran both on its home framework and on another"))
    columns = [REGIME, "default", "source_framework", "source_dataset", "target_framework", "target_dataset",
               "n_seeds", "accuracy", "accuracy_low", "accuracy_high", "relative_accuracy", "train_time_s",
               "relative_time", "budget_scale", "diverged", "divergence_rate"]
    parts.append(f"<details><summary>{html.escape('Every default on every framework and dataset' + budget)} "
                 f"({len(cells)} cells)</summary>" + table_html(cells[[c for c in columns if c in cells]])
                 + "</details>")
    return "".join(parts)


def _difference(row: dict) -> str:
    if row["low"] is None or row["low"] != row["low"]:
        return f"{row['estimate']:+.3f} ({row['n_a']} and {row['n_b']} seeds: no interval)"
    return f"{row['estimate']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}] p={row['p']:.2g}"


def robustness_html(curves: pd.DataFrame, source: pd.DataFrame, pgd_steps: int) -> str:
    protocol = protocol_of(source)
    note = "" if (curves["n"] >= 2).any() else missing_html(
        "one model per framework: no interval; keep the weights of 3 or more seeds for one")
    cell = [f"{m:.3f} (n={n}, {r:.2f} of clean)" for m, n, r in zip(curves["accuracy_mean"], curves["n"],
                                                                      curves["relative_mean"])]
    curves = curves.assign(cell=cell)
    white = curves[curves["kind"].eq("white-box")].pivot(
        index=[REGIME, "dataset", "default", "role", "attack", "target_framework"], columns="eps", values="cell")
    cross = curves[curves["kind"].eq("transfer")].pivot(
        index=[REGIME, "dataset", "default", "role", "attack", "source_framework", "target_framework"], columns="eps",
        values="cell")
    tables = [("White-box accuracy of the states the verdict compares (each configuration's models at matched clean "
               "accuracy where they kept checkpoints), by eps (and its share of the model's clean accuracy)",
               white), ("Accuracy on the examples made on the seed's surrogate, by eps", cross)]
    grids = "; ".join(f"{d}: {list((protocol.get('eps_by_dataset') or {}).get(d, protocol['eps']))}"
                      for d in sorted(curves["dataset"].unique())) if protocol else ""
    grid = (f"the eps grid of each dataset ({grids}) registered in {protocol['file']} (sha256 "
            f"{protocol['sha256'][:12]}) before any attack" if protocol else
            "the eps the attack was given (no protocol recorded)")
    surrogate = curves["source_framework"].astype(str).str.startswith("surrogate").any()
    made_by = "its seed's surrogate" if surrogate else "the set's other frameworks"
    samples = ("the whole test set" if protocol and not protocol.get("samples")
               else f"the first {int(curves['samples'].min())} test samples")
    method = note_html(
        "White-box attacks through each model's own framework: FGSM, and PGD with a random start and "
        f"{pgd_steps} steps of 2.5 eps / {pgd_steps}; eps is an L-infinity radius in the data's [0, 1] range, "
        f"{grid}, on {samples}. n: the models (seeds, configurations) behind a mean; 95% intervals from 3 models on "
        "(2: their range). Frameworks are compared at matched clean accuracy: each set's target is the lowest "
        "final validation accuracy of its models, and each model's checkpoint nearest it is attacked besides the "
        "model as trained; the comparison is the area under the robust-accuracy curve on the samples both models "
        f"classify correctly, under the examples {made_by} made (transfer), with a paired bootstrap "
        "over seeds and samples. Examples made on a model of one regime are not tested on a model of the other.")
    parts = [regime_html(curves), note, method, figure_html(plot_robustness(Robustness(curves)), "robustness")]
    parts += [f"<h3>{title}</h3>" + table_html(regime_sorted(frame.rename(columns=lambda e: f"eps {e:g}")
                                                             .rename_axis(columns=None).reset_index(),
                                                             frame.index.names))
              for title, frame in tables if len(frame)]
    pairs = robustness_comparisons(source)
    if len(pairs):
        parts.append("<h3>Frameworks compared: area under the robust-accuracy curve on the samples both classify "
                     f"correctly (clean accuracies within {protocol.get('clean_margin', 0.02):g})</h3>"
                     + table_html(_pairs_table(pairs)))
    return "".join(parts) + _checks_html(robustness_checks(source))


def _pairs_table(pairs: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({
        REGIME: pairs[REGIME], "dataset": pairs["dataset"],
        "models": pairs["set_kind"].map({"own": "own defaults", "all": "all models"}).fillna(pairs["default"]),
        "state": pairs["role"].map({"matched": "matched", "published": "as trained"}),
        "attack": pairs["attack"].str.upper() + " " + pairs["kind"],
        "frameworks": pairs["framework_a"] + " vs " + pairs["framework_b"],
        "clean": [f"{a:.3f} vs {b:.3f}" for a, b in zip(pairs["clean_a"], pairs["clean_b"])],
        "robust AUC": ["" if a is None or a != a else f"{a:.3f} vs {b:.3f}" for a, b in zip(pairs["auc_a"],
                                                                                         pairs["auc_b"])],
        "difference": [r["note"] and f"not compared: {r['note']}" or _difference(r) for r in pairs.to_dict("records")],
        "the claim's": pairs["primary"].map({True: "yes", False: ""})})


def _checks_html(checks: pd.DataFrame) -> str:
    """What the attack checks found: every failure, or that they held."""
    failed = checks[checks["failed"].map(bool)]
    if len(failed):
        items = []
        for row in failed.to_dict("records"):
            state = "" if row["epoch"] is None or row["epoch"] != row["epoch"] else f" after epoch {row['epoch']:.0f}"
            items.append(f"trial {row['trial']}{state} ({row['framework']}): {'; '.join(row['failed'])}")
        return warning_html("Attack checks failed: " + "; ".join(items))
    if len(checks):
        return note_html(f"The attack checks held on all {len(checks)} attacked models: at most "
                         f"{checks['zero_gradient'].max():.1%} of samples with an all-zero input gradient, PGD no "
                         f"weaker than FGSM, accuracy at most {checks['accuracy_at_check'].max():.3f} at eps "
                         f"{checks['check_eps'].max():g}.")
    return ""
