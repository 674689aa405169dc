"""A run that finished without training (status ok, but at chance) is an outcome of its own, like divergence
(issue 41, point 6): counted apart, tested by Fisher's exact test where two sides are compared, and never part
of an accuracy that is compared."""
import math

import numpy as np
import pandas as pd
from analysis_data import frame
from planted import NULL_TRUE, as_frame, transfer_rows

from sensitivity.analysis.claims.findings import findings
from sensitivity.analysis.table import COLLAPSE_ACCURACY, COLLAPSE_LOSS, collapsed_mask, trials_table
from sensitivity.analysis.tables.divergence import divergence_rates
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.tables.transfer import transfer_matrix

UNIFORM = math.log(10)


def test_the_rule_is_a_flat_loss_at_a_uniform_guess_or_an_accuracy_at_chance():
    rows = pd.DataFrame([
        ("digits", UNIFORM, 0.45),  # the loss of a uniform guess: it did not train, whatever argmax gave
        ("digits", UNIFORM * (1 + COLLAPSE_LOSS * 0.9), 0.6),  # inside the tolerance
        ("digits", UNIFORM * (1 - COLLAPSE_LOSS * 2), 0.45),  # outside it: a slow start, not a collapse
        ("digits", 1.3, 0.1 + COLLAPSE_ACCURACY),  # one class predicted: chance accuracy, any loss
        ("digits", 1.3, 0.1 + COLLAPSE_ACCURACY + 0.01),
        ("cifar100", 0.5, 0.05),  # 100 classes: chance is 0.01, so 0.05 is at most 0.04 above it
        ("cifar100", 0.5, 0.07),
        ("a-dataset-nobody-registered", UNIFORM, 0.1),  # classes unknown: not judged
        ("digits", np.nan, np.nan),
    ], columns=["dataset", "loss", "accuracy"])
    assert collapsed_mask(rows).tolist() == [True, True, False, True, False, True, False, False, False]


def collapsed_world(collapse: int):
    """Framework transfer with nothing planted; `collapse` of the five runs of jax's default on torch finish
    with status ok at chance (accuracy 0.1, the final loss of a uniform guess)."""
    rows = transfer_rows(np.random.default_rng(9), seeds=(5, 5), truth=NULL_TRUE, study=9)
    cell = [r for r in rows if (r["default"], r["framework"], r["dataset"]) == ("jax-default", "torch", "digits")]
    for run in cell[:collapse]:
        run.update(accuracy=0.1, val_accuracy=0.1, loss=UNIFORM, test_correct=None)
    return as_frame(rows, f"collapsed-{collapse}"), len(cell)


def test_collapsed_runs_count_against_transfer_by_the_exact_test_and_leave_the_accuracy():
    table, runs = collapsed_world(2)
    assert table["outcome"].eq("collapsed").sum() == 2 and runs == 5
    found = findings(table)
    pair = found.comparisons[found.comparisons["label"].eq("digits: jax's jax-default on torch vs at home")
                             & found.comparisons["semantics"].eq("native")].iloc[0]
    assert pair["n_a"] == 3  # accuracy over the three runs that trained
    assert pair["low"] <= 0 <= pair["high"], pair["sentence"]  # nothing planted among them
    assert ("did not train (diverged or collapsed at chance) 2 of 5 against 0 of 5 (Fisher p=0.44)"
            in pair["sentence"]), pair["sentence"]
    cell = transfer_matrix(table).set_index(["default", "target_framework", "target_dataset"]).loc[
        ("jax-default", "torch", "digits")]
    assert (cell["collapsed"], cell["collapse_rate"], cell["diverged"]) == (2, 0.4, 0)
    assert cell["accuracy"] > 0.9  # the mean of the runs that trained


def test_a_default_whose_runs_all_collapse_loses_by_the_exact_test():
    table, _ = collapsed_world(5)
    found = findings(table)
    pair = found.comparisons[found.comparisons["label"].eq("digits: jax's jax-default on torch vs at home")
                             & found.comparisons["semantics"].eq("native")].iloc[0]
    assert "5 of 5 against 0 of 5 (Fisher p=0.0079)" in pair["sentence"], pair["sentence"]


def test_collapsed_runs_are_never_on_a_frontier_and_are_counted_in_each_bin():
    table, _ = collapsed_world(2)
    frontier = runtime_accuracy_frontier(table)
    collapsed = frontier.points[frontier.points["outcome"].eq("collapsed")]
    assert len(collapsed) == 2 and not collapsed["on_frontier"].any() and not collapsed["on_framework_frontier"].any()


def test_each_bin_counts_its_collapsed_runs_beside_its_diverged_ones():
    def row(lr, accuracy, status="ok", loss=0.3):
        return {"framework": "torch", "lr": lr, "status": status, "state": "COMPLETE", "accuracy": accuracy,
                "loss": loss, "train_time_s": 1.0, "dataset": "digits"}
    table = trials_table(frame(row(1e-4, 0.9), row(2e-4, 0.1, loss=2.9), row(3e-4, 0.7, loss=UNIFORM),
                               row(0.5, 0.1, "diverged", loss=None), row(0.9, 0.95)))
    assert table["outcome"].tolist() == ["ok", "collapsed", "collapsed", "diverged", "ok"]
    rates = divergence_rates(table, parameters=["lr"], bins=2).set_index("order")
    assert rates.loc[0, ["n_trials", "n_ok", "n_collapsed", "n_diverged"]].tolist() == [3, 1, 2, 0]
    assert rates.loc[0, "collapse_rate"] == 2 / 3 and rates.loc[1, "divergence_rate"] == 1 / 2
