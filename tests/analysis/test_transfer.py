"""The transfer matrix from a table of default trials: relative to the target's own default, with n."""
import pandas as pd
import pytest

from sensitivity.analysis.table import NotEnoughData
from sensitivity.analysis.figures import transfer as transfer_figure
from sensitivity.analysis.tables.transfer import budget_note, richest_transfer, transfer_comparisons, transfer_matrix


def row(number, default, source, framework, dataset, accuracy, own, seed=0):
    return {"number": number, "state": "COMPLETE", "status": "ok", "param_framework": framework, "default": default,
            "default_source": source, "source_dataset": "mnist", "own_default": own, "is_default": own,
            "dataset": dataset, "accuracy": accuracy, "val_accuracy": accuracy, "train_time_s": 2.0 if own else 1.0,
            "seed": seed, "config_id": f"{default}:{framework}:{dataset}", "curve": "[]", "value_0": accuracy}


def table():
    rows = [row(0, "torch-demo", "torch", "torch", "digits", 0.8, True),
            row(1, "torch-demo", "torch", "torch", "digits", 0.6, True, seed=1),
            row(2, "tf-demo", "tensorflow", "torch", "digits", 0.35, False),
            row(3, "tf-demo", "tensorflow", "tensorflow", "digits", 0.9, True),
            row(4, "torch-demo", "torch", "tensorflow", "digits", 0.45, False)]
    return pd.DataFrame(rows)


def test_cells_are_relative_to_the_targets_own_default_with_seed_counts():
    cells = transfer_matrix(table()).set_index(["default", "target_framework"])
    assert cells.loc[("torch-demo", "torch"), "n_seeds"] == 2
    assert cells.loc[("torch-demo", "torch"), "accuracy"] == pytest.approx(0.7)
    assert cells.loc[("tf-demo", "torch"), "relative_accuracy"] == pytest.approx(0.35 / 0.7)
    assert cells.loc[("torch-demo", "tensorflow"), "relative_accuracy"] == pytest.approx(0.5)
    assert cells.loc[("tf-demo", "torch"), "relative_time"] == pytest.approx(0.5)
    assert cells.loc[("tf-demo", "tensorflow"), "own_default"] == "tf-demo"


def test_figure_has_both_findings():
    fig = transfer_figure.plot(transfer_figure.compute(table()))
    titles = [a.text for a in fig.layout.annotations]
    assert any("Across datasets within a framework" in t for t in titles)
    assert any("Across frameworks on digits" in t for t in titles)
    assert any("(n=2)" in str(cell) for trace in fig.data for line in trace.text for cell in line)


def test_a_study_without_defaults_says_what_would_fill_it():
    plain = table().drop(columns=["default"])
    with pytest.raises(NotEnoughData, match="sensitivity transfer"):
        transfer_matrix(plain)


def test_the_budget_scale_stands_in_every_title_when_below_1():
    cut = table().assign(budget_scale=[0.04, 0.04, 0.5, 0.04, 0.5])
    fig = transfer_figure.plot(transfer_figure.compute(cut))
    assert "budget cut: each default ran 0.04 to 0.5 of its published epochs" in fig.layout.title.text
    assert all("(cut budget)" in a.text for a in fig.layout.annotations)
    assert budget_note([1.0, None]) == ""
    assert "budget" not in transfer_figure.plot(transfer_figure.compute(table())).layout.title.text


def test_diverged_runs_are_counted_apart_from_the_accuracy():
    rows = table()
    rows.loc[1, "status"] = "diverged"  # torch-demo's second seed at home
    cells = transfer_matrix(rows).set_index(["default", "target_framework"])
    assert cells.loc[("torch-demo", "torch"), "accuracy"] == pytest.approx(0.8)  # the converged run alone
    assert cells.loc[("torch-demo", "torch"), ["diverged", "divergence_rate"]].tolist() == [1, 0.5]
    moved = transfer_comparisons(rows).set_index(["default", "framework"]).loc[("torch-demo", "tensorflow")]
    assert (moved["diverged_b"], moved["runs_b"], moved["diverged_a"]) == (1, 2, 0)


def test_comparisons_under_3_seeds_give_the_difference_without_an_interval():
    rows = transfer_comparisons(table())
    moved = rows[rows["question"].eq("frameworks")].set_index(["default", "framework", "reference"])
    home = moved.loc[("tf-demo", "torch", "tf-demo on tensorflow, digits")]
    assert home["estimate"] == pytest.approx(0.35 - 0.9) and home["low"] is None
    # no parametric test under 3 seeds: the seeds' exact permutation test, or none with one seed a side
    assert home["test"] == ("exact permutation" if home["n_a"] + home["n_b"] > 2 else "none")
    assert len(moved) == 2  # each default moved from its home to the other framework, against itself at home
    estimate = moved.loc[("torch-demo", "tensorflow", "torch-demo on torch, digits"), "estimate"]
    assert estimate == pytest.approx(0.45 - 0.7)


def test_the_richest_source_holds_the_most_datasets():
    one = table()
    two = pd.concat([table(), pd.DataFrame([row(9, "torch-demo", "torch", "torch", "mnist5k", 0.9, True)])],
                    ignore_index=True)
    source, cells = richest_transfer([one, two])
    assert source is two and set(cells["target_dataset"]) == {"digits", "mnist5k"}
