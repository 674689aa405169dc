"""The report's transfer section: dataset transfer as crossovers (every source's, the placebo's among them), then
framework transfer from the richest transfer study: the matrix of every default on every framework and dataset, and
each default moved from its home framework against itself at home."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.figures import crossover as crossover_figure
from sensitivity.analysis.figures import transfer as transfer_figure
from sensitivity.analysis.report.html import (difference_text, figure_html, note_html, origin_html, regime_html,
                                              table_html, warning_html)
from sensitivity.analysis.table import REGIME, NotEnoughData
from sensitivity.analysis.tables.crossover import NEEDS, crossover_comparisons
from sensitivity.analysis.tables.transfer import budget_note, richest_transfer, transfer_comparisons


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
        parts.append(origin_html(source, sources) + figure_html(
            crossover_figure.plot(crossover_figure.info_of(source, part)),
            "crossover" if index == 0 else f"crossover-{index}"))
    shown = pd.DataFrame({REGIME: rows[REGIME], "crossover": [("placebo: " if p else "") + c for p, c in zip(
        rows["placebo"], rows["crossover"])], "tuned for A": rows["config_a"], "tuned for B": rows["config_b"],
        "accuracy (mean [95%] n, train time)": ["; ".join(f"{k}: {v}" for k, v in c.items()) for c in rows["cells"]],
        "home advantage [95%]": [difference_text(r) for r in rows.to_dict("records")],
        "own configuration's train time, x the other's": [
            "-" if t is None or t != t else f"{t:.2f} [{lo:.2f}, {hi:.2f}]" if lo is not None else f"{t:.2f}"
            for t, lo, hi in zip(rows["time_ratio"], rows["time_low"], rows["time_high"])],
        "diverged": ["; ".join(f"{k}: {v}" for k, v in d.items()) for d in rows["diverged"]],
        "budget scale": rows["budget_scale"]})
    return "".join(parts) + table_html(shown)


def _frameworks_html(sources: list) -> str:
    source, cells = richest_transfer(sources)
    budget = budget_note(cells["budget_scale"])
    parts = ["<h3>Across frameworks</h3>", origin_html(source, sources), regime_html(cells), note_html(
        "Every default on every framework (the matrix), and each default moved from its home framework to each "
        "other one against itself at home, same dataset, regime and budget (the pairs): test accuracy over converged "
        "runs, 95% intervals with the test set's sampling error. The canonical regime is the control: with the same "
        "formulas in every framework, what differs is numerics.")]
    if budget:
        parts.append(warning_html(budget.strip(" ()").capitalize() + ": these numbers measure early learning, not "
                                  "the defaults as published."))
    parts.append(figure_html(transfer_figure.plot(transfer_figure.Info.of(cells)), "transfer"))
    rows = transfer_comparisons(source)
    shown = pd.DataFrame({REGIME: rows[REGIME], "subject": rows["subject"], "accuracy": rows["subject_text"],
                          "against": rows["reference"], "its accuracy": rows["reference_text"],
                          "difference [95%], p (uncorrected; Holm in Findings)":
                              [difference_text(r) for r in rows.to_dict("records")],
                          "diverged": [f"{a} of {n} vs {b} of {m}" for a, n, b, m in zip(
                              rows["diverged_a"], rows["runs_a"], rows["diverged_b"], rows["runs_b"])],
                          "collapsed": [f"{a} of {n} vs {b} of {m}" for a, n, b, m in zip(
                              rows["collapsed_a"], rows["runs_a"], rows["collapsed_b"], rows["runs_b"])],
                          "budget scale": rows["budget_scale"]})
    parts.append(f"<h4>{html.escape('A default moved to another framework, against itself at home' + budget)}</h4>"
                 + table_html(shown, "no comparison: no default ran both on its home framework and on another"))
    columns = [REGIME, "default", "source_framework", "source_dataset", "target_framework", "target_dataset",
               "n_seeds", "accuracy", "accuracy_low", "accuracy_high", "relative_accuracy", "train_time_s",
               "relative_time", "budget_scale", "diverged", "divergence_rate", "collapsed", "collapse_rate"]
    parts.append(f"<details><summary>{html.escape('Every default on every framework and dataset' + budget)} "
                 f"({len(cells)} cells)</summary>" + table_html(cells[[c for c in columns if c in cells]])
                 + "</details>")
    return "".join(parts)
