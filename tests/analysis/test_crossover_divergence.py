"""Divergence apart in a crossover: a cell where every run diverged has no accuracy, so the home advantage is
not summed; the side that has accuracies carries the estimate, the other side's evidence is its divergence by
Fisher's exact test, and no p comes from a cell of imputed chance accuracy."""
import numpy as np
from planted import CROSSOVER, as_frame, crossover_rows

from sensitivity.analysis.tables.crossover import crossover_comparisons
from sensitivity.analysis.claims.findings import findings


def _with_a_diverged_cell(seed: int = 5):
    rng = np.random.default_rng(seed)
    rows = crossover_rows(rng, seeds=(5, 5), placebo=False, study=seed)
    for row in rows:  # digits' configuration diverges on mnist5k, every run
        if row["tuned_for"] == "digits" and row["dataset"] == "mnist5k":
            row.update(status="diverged", accuracy=0.1, val_accuracy=0.1, test_correct=None)
    return as_frame(rows, "diverged-crossover")


def test_every_run_of_a_cell_diverged_so_the_other_side_carries_the_estimate():
    table = _with_a_diverged_cell()
    row = crossover_comparisons(table).iloc[0].to_dict()
    assert row["summed"] is False and row["carried_by"] == "digits"
    sides = {side["dataset"]: side for side in row["sides"]}
    assert sides["mnist5k"]["estimate"] is None and sides["mnist5k"]["visitor_diverged"] == 5
    assert sides["mnist5k"]["p_diverged"] < 0.01  # 5 of 5 against 0 of 5: Fisher's 0.0079
    planted = CROSSOVER[("digits", "digits")] - CROSSOVER[("mnist5k", "digits")]  # +0.07 on digits
    assert row["estimate"] == sides["digits"]["estimate"] and row["low"] <= planted <= row["high"]
    assert row["test"] == "welch t" and row["df"] <= 8


def test_the_sentence_says_the_sum_was_not_made_and_which_side_carries_it():
    found = findings(_with_a_diverged_cell(6))
    comparison = found.comparisons[found.comparisons["claim"].eq("dataset transfer")].iloc[0]
    assert "the home advantage is not summed: its estimate is the side of digits alone" in comparison["sentence"]
    assert "so that side has no accuracy" in comparison["sentence"]
    assert comparison["p"] > 1e-12  # no zero-variance cell of chance accuracy behind the test


def test_where_both_sides_converge_the_home_advantage_is_summed():
    rng = np.random.default_rng(4)
    row = crossover_comparisons(as_frame(crossover_rows(rng, seeds=(5, 5), placebo=False, study=4), "x")).iloc[0]
    assert bool(row["summed"]) and row["carried_by"] is None and len(row["sides"]) == 2
    assert abs(row["estimate"] - sum(side["estimate"] for side in row["sides"])) < 1e-9
