"""The report's robustness section: accuracy against eps, white-box and on the surrogate's examples, by the
protocol registered before any attack; the frameworks compared at matched clean accuracy; the attack checks."""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.figures import robustness as robustness_figure
from sensitivity.analysis.report.html import (difference_text, figure_html, missing_html, note_html, regime_html,
                                              table_html, warning_html)
from sensitivity.analysis.table import REGIME, regime_sorted
from sensitivity.analysis.tables.robustness import robustness_checks
from sensitivity.analysis.tables.robustness_pairs import protocol_of, robustness_comparisons


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
    parts = [regime_html(curves), note, method, figure_html(robustness_figure.plot(robustness_figure.Info(curves)),
                                                             "robustness")]
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
        "difference": [r["note"] and f"not compared: {r['note']}" or difference_text(r)
                       for r in pairs.to_dict("records")],
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
