"""Regimes kept apart: a study holding native and canonical trials (canonical scoring CANONICAL_OFFSET less)
never mixes them in one number, one cell, one frontier, one ranking or one report section."""
import re

import numpy as np
import pandas as pd
import pytest
from analysis_data import CANONICAL_OFFSET, HAND_WRITTEN, REGIMES, frame, make_study

from sensitivity.analysis.tables.curves import contour_grid, learning_curves, slice_points
from sensitivity.analysis.tables.divergence import divergence_rates
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.rankings.importance import NEEDS, parameter_importance
from sensitivity.analysis.tables.isolation import isolation
from sensitivity.analysis.figure_table import STUDY_KINDS, figure
from sensitivity.analysis.report.page import environment, regime_counts, render_report
from sensitivity.analysis.tables.resources import resource_use
from sensitivity.analysis.tables.robustness import robustness_curves
from sensitivity.analysis.tables.seeds import seed_intervals
from sensitivity.analysis.tables.summary import framework_summary
from sensitivity.analysis.table import grouped, parameter_names, regime_note, trials_table
from sensitivity.analysis.figures import transfer as transfer_figure
from sensitivity.analysis.tables.transfer import transfer_matrix

SECTIONS = ("environment", "summary", "frontier", "importance", "isolation", "seeds", "resources", "divergence",
            "curves", "slice", "contour", "transfer", "robustness", "runtime")
BOTH = "Regimes: native and canonical, kept apart"


@pytest.fixture(scope="module")
def both():
    """12 configurations x 2 seeds, each run natively and canonically (the regime also a parameter, the same
    config_id in both), 2 failed and 1 pruned native trials, 3 framework defaults."""
    return trials_table(make_study(n_configs=12, seeds=2, failed=2, pruned=1, defaults=(0, 1, 2), regimes=REGIMES,
                                   regime_param=True, name="both-regimes"))


def by_regime(rows: pd.DataFrame, keys, column: str) -> pd.DataFrame:
    """`column` of native and of canonical side by side, per `keys`."""
    return rows.pivot_table(index=list(keys), columns="semantics", values=column)


# the trial table and its grouping

def test_each_trial_has_its_regime_and_groups_list_native_first(both):
    assert set(both["semantics"]) == set(REGIMES) and (both["semantics"] == both["param_semantics"]).all()
    assert grouped(both)[["framework", "semantics"]].values.tolist()[:2] == [["jax", "native"], ["jax", "canonical"]]
    assert "semantics" not in parameter_names(both, framework=False) and "semantics" in parameter_names(both)
    assert regime_note(both) == BOTH
    assert regime_note(both[both["semantics"] == "native"]) == "Regime: native"
    assert set(trials_table(make_study(n_configs=3))["semantics"]) == {"canonical"}  # recorded before regimes


def test_the_recorded_regime_wins_over_an_absent_parameter():
    table = trials_table(frame({"framework": "torch", "semantics": "native", "accuracy": 0.9},
                               {"framework": "torch", "param_semantics": "native", "accuracy": 0.8},
                               {"framework": "torch", "accuracy": 0.7}))
    assert table["semantics"].tolist() == ["native", "native", "canonical"]


# aggregations: one row per framework and regime, means of one regime only

def test_summary_has_one_row_per_dataset_framework_and_regime(both):
    summary = framework_summary(both)
    assert len(summary) == 6 and not summary.duplicated(["dataset", "framework", "semantics"]).any()
    accuracy = by_regime(summary, ["framework"], "best_accuracy")
    assert (accuracy["native"] - accuracy["canonical"]).to_numpy() == pytest.approx([CANONICAL_OFFSET] * 3)
    counts = summary.set_index(["framework", "semantics"])
    assert counts.loc[("jax", "native"), ["n_trials", "n_failed", "n_pruned"]].tolist() == [10, 1, 1]
    assert counts.loc[("jax", "canonical"), ["n_trials", "n_failed", "n_pruned"]].tolist() == [8, 0, 0]


def test_resources_per_framework_and_regime(both):
    usage = resource_use(both)
    assert set(zip(usage["framework"], usage["semantics"])) == {(f, r) for f in ("jax", "tensorflow", "torch")
                                                                for r in REGIMES}


def test_seed_means_never_pool_the_regimes_of_one_configuration(both):
    intervals = seed_intervals(both)
    assert (intervals["n_seeds"] == 2).all()  # 2 seeds per regime, not 4 per config_id
    means = by_regime(intervals[intervals["accuracy_mean"] > 0.2], ["framework", "config_id"], "accuracy_mean")
    assert (means["native"] - means["canonical"]).to_numpy() == pytest.approx(
        [CANONICAL_OFFSET] * len(means))


def test_isolation_takes_the_best_of_each_regime(both):
    rows = isolation(both, parameters=["lr"])
    best = by_regime(rows[rows["best_accuracy"] > 0.2], ["order", "framework"], "best_accuracy").dropna()
    assert len(best) and (best["native"] - best["canonical"]).to_numpy() == pytest.approx(
        [CANONICAL_OFFSET] * len(best))


def test_divergence_curves_slice_and_contour_carry_the_regime(both):
    rates = divergence_rates(both, parameters=["lr"])
    assert rates.groupby(["order", "framework", "semantics"]).size().max() == 1
    assert set(rates["semantics"]) == set(REGIMES)
    assert set(learning_curves(both)["semantics"]) == set(REGIMES)
    assert set(slice_points(both)["semantics"]) == set(REGIMES)
    grid = contour_grid(both, parameters=["lr", "momentum"], bins=2)
    cells = grid[~grid["is_default"]]
    means = by_regime(cells, ["x", "y"], "accuracy")
    assert set(cells["semantics"]) == set(REGIMES) and cells.groupby(["semantics", "x", "y"]).size().max() == 1
    assert not np.allclose(means["native"], means["canonical"])


def test_a_canonical_trial_never_dominates_a_native_one_on_the_frontier():
    table = trials_table(frame({"framework": "torch", "semantics": "native", "accuracy": 0.90, "train_time_s": 10},
                               {"framework": "jax", "semantics": "native", "accuracy": 0.80, "train_time_s": 20},
                               {"framework": "torch", "semantics": "canonical", "accuracy": 0.95, "train_time_s": 5}))
    frontier = runtime_accuracy_frontier(table)
    points = frontier.points.set_index("number")
    assert points.loc[0, "on_frontier"] and points.loc[2, "on_frontier"] and not points.loc[1, "on_frontier"]
    assert points["semantics"].tolist()[0] == "native"  # native listed first
    summary = frontier.summary.set_index(["scope", "semantics"])
    assert summary.loc[("all", "native"), "hypervolume"] == pytest.approx((22 - 10) * 0.90)
    assert summary.loc[("all", "canonical"), "hypervolume"] == pytest.approx((22 - 5) * 0.95)
    assert summary.loc[("all", "native"), "n_trials"] == 2 and summary.loc[("torch", "canonical"), "n_trials"] == 1
    assert frontier.summary["semantics"].tolist()[:3] == ["native"] * 3


# transfer: each cell against the target's own default in the same regime

def transfer_rows():
    from test_transfer import row, table

    canonical = [row(5, "torch-demo", "torch", "torch", "digits", 0.5, True),
                 row(6, "tf-demo", "tensorflow", "torch", "digits", 0.45, False),
                 row(7, "tf-demo", "tensorflow", "tensorflow", "digits", 0.6, True),
                 row(8, "torch-demo", "torch", "tensorflow", "digits", 0.3, False)]
    native = table().assign(semantics="native")
    return pd.concat([native, pd.DataFrame(canonical).assign(semantics="canonical")], ignore_index=True)


def test_transfer_cells_are_per_regime_and_relative_to_the_same_regimes_own_default():
    cells = transfer_matrix(transfer_rows())
    assert cells["semantics"].tolist()[:4] == ["native"] * 4  # native first
    cells = cells.set_index(["default", "target_framework", "semantics"])
    assert cells.loc[("torch-demo", "torch", "native"), ["accuracy", "n_seeds"]].tolist() == [pytest.approx(0.7), 2]
    assert cells.loc[("torch-demo", "torch", "canonical"), ["accuracy", "n_seeds"]].tolist() == [0.5, 1]
    assert cells.loc[("tf-demo", "torch", "native"), "relative_accuracy"] == pytest.approx(0.35 / 0.7)
    assert cells.loc[("tf-demo", "torch", "canonical"), "relative_accuracy"] == pytest.approx(0.45 / 0.5)
    assert cells.loc[("torch-demo", "tensorflow", "canonical"), "relative_accuracy"] == pytest.approx(0.3 / 0.6)


def test_transfer_figure_puts_the_regimes_side_by_side_native_first():
    fig = transfer_figure.plot(transfer_figure.compute(transfer_rows()))
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:2] == ["Across datasets within a framework (native):<br>accuracy of its defaults",
                          "Across datasets within a framework (canonical):<br>accuracy of its defaults"]
    assert any("Across frameworks on digits (canonical)" in t for t in titles)
    across = {trace.xaxis: trace for trace in fig.data}
    canonical = dict(zip([(y, x) for y in across["x4"].y for x in across["x4"].x],
                         [v for line in across["x4"].z for v in line]))
    assert canonical[("tf-demo", "torch")] == pytest.approx(0.9)
    assert "(n=2)" in str(across["x3"].text) and "(n=1)" in str(across["x4"].text)
    assert "native, canonical, kept apart" in fig.layout.title.text


# importance: one block per regime, and "all" where the regime is a parameter

def test_importance_has_a_block_per_regime_and_one_over_all_trials(both):
    found = parameter_importance(both, evaluators=("ped_anova",))
    out = found.rows
    assert list(dict.fromkeys(out["semantics"])) == ["native", "canonical", "all"]
    blocks = {block: set(rows["parameter"]) for block, rows in out.groupby("semantics")}
    assert "semantics" in blocks["all"] and "semantics" not in blocks["native"] | blocks["canonical"]
    assert all("framework" in params for params in blocks.values())
    # sampled trials only: the 3 framework defaults (x 2 seeds per regime) are planned, not samples
    assert out.groupby("semantics")["n_trials"].max().to_dict() == {"native": 18, "canonical": 18, "all": 36}
    assert found.planned == 12
    assert out.groupby("semantics")["importance"].sum().to_numpy() == pytest.approx([1.0] * 3)


def test_importance_without_the_regime_as_a_parameter_has_no_all_block():
    table = trials_table(make_study(n_configs=9, seeds=1, regimes=REGIMES))
    assert "param_semantics" not in table
    out = parameter_importance(table, evaluators=("ped_anova",)).rows
    assert list(dict.fromkeys(out["semantics"])) == ["native", "canonical"]


def test_a_regime_with_too_few_trials_is_named_missing():
    rows = [{"framework": fw, "lr": lr, "accuracy": acc, "train_time_s": 1.0, "semantics": "native"}
            for fw, lr, acc in [("torch", 0.01, 0.9), ("torch", 0.1, 0.5), ("jax", 0.001, 0.7)]]
    rows.append({"framework": "torch", "lr": 0.01, "accuracy": 0.8, "train_time_s": 1.0, "semantics": "canonical"})
    out = parameter_importance(trials_table(frame(*rows)), evaluators=("ped_anova",))
    assert set(out.rows["semantics"]) == {"native"} and out.missing == {"canonical": NEEDS}


# robustness: means over models of one regime; cross-regime examples left out

def test_robustness_curves_are_per_regime_without_cross_regime_pairs():
    from test_robustness import model, record, table

    rows = [model(0, "torch"), model(1, "torch"), model(2, "mxnet")]
    rows[1]["semantics"] = "canonical"
    rows[0]["semantics"] = rows[2]["semantics"] = "native"
    records = {0: record([0.9, 0.4], {"1": {"fgsm": [0.9, 0.1]}, "2": {"fgsm": [0.9, 0.7]}}),
               1: record([0.9, 0.6], {"0": {"fgsm": [0.9, 0.2]}})}
    curves = robustness_curves(table(records, rows))
    white = curves[curves["kind"].eq("white-box") & curves["eps"].eq(0.1)].set_index(["target_framework", "semantics"])
    assert white.loc[("torch", "native"), ["accuracy_mean", "n"]].tolist() == [0.4, 1]
    assert white.loc[("torch", "canonical"), ["accuracy_mean", "n"]].tolist() == [0.6, 1]
    moved = curves[curves["kind"].eq("transfer") & curves["eps"].eq(0.1)]
    assert moved[["source_framework", "target_framework", "semantics", "accuracy_mean"]].values.tolist() == [
        ["mxnet", "torch", "native", 0.7]]  # the canonical torch model's examples are not averaged in


# figures and the report

@pytest.mark.parametrize("kind", STUDY_KINDS)
def test_every_figure_names_the_regimes_and_keeps_them_apart(both, kind):
    fig = figure(both, kind)
    assert "native" in fig.layout.title.text and "canonical" in fig.layout.title.text
    if kind == "parallel":  # the regime an axis of its own
        axis = next(d for d in fig.data[0].dimensions if d.label == "regime")
        assert list(axis.ticktext) == ["native", "canonical"]
    elif kind not in ("importance", "contour", "findings"):  # those draw a panel per regime, titled with it
        names = " ".join(str(t.name) + str(t.x if kind == "resources" else "") for t in fig.data)
        assert ", native" in names and ", canonical" in names
    else:
        titles = " ".join(a.text for a in fig.layout.annotations)
        assert "native" in titles and "canonical" in titles


def test_a_figure_of_one_regime_says_it_in_its_title():
    fig = figure(trials_table(make_study(n_configs=6, regimes=("native",))), "frontier")
    assert "(regime: native)" in fig.layout.title.text
    assert not any(", native" in str(t.name) for t in fig.data)  # the legend need not repeat it


@pytest.fixture(scope="module")
def report(both):
    from test_robustness import record

    defaults = trials_table(transfer_rows())
    defaults.attrs.update(study="defaults-study", robustness={0: record([0.8, 0.3]), 5: record([0.7, 0.2])})
    return render_report(both, [defaults])


def sections(text: str) -> dict:
    return dict(re.findall(r'<section id="([a-z-]+)"><h2>.*?</h2>\n(.*?)\n</section>', text, flags=re.S))


def test_the_study_section_counts_the_trials_of_each_regime(both, report):
    study = sections(report)["study"]
    assert regime_counts(both) == "native: 27 trials; canonical: 24 trials" and regime_counts(both) in study
    assert "defaults-study: 9 final trials (native: 5 trials; canonical: 4 trials" in study


@pytest.mark.parametrize("anchor", SECTIONS)
def test_every_section_says_it_keeps_both_regimes_apart(report, anchor):
    assert BOTH in sections(report)[anchor]


def test_importance_section_shows_each_block(report):
    text = sections(report)["importance"]
    assert all(f"<h3>{title} (n=" in text for title in ("Regime native", "Regime canonical",
                                                        "All trials, the regime a parameter"))


def test_environment_lists_the_optimizers_of_each_framework_and_regime(both):
    env = environment(both).set_index("")["value"]
    assert env["optimizer (torch, native)"] == "torch.optim.SGD"
    assert env["optimizer (torch, canonical)"] == HAND_WRITTEN
    labels = [label for label in env.index if label.startswith("optimizer")]
    assert labels[:3] == ["optimizer (jax, native)", "optimizer (tensorflow, native)", "optimizer (torch, native)"]


def test_a_section_of_one_regime_says_which(tmp_path):
    text = render_report(trials_table(make_study(n_configs=6, regimes=("native",))))
    found = sections(text)
    assert all("Regime: native." in found[a] for a in ("summary", "frontier", "importance", "slice"))
    assert "native: 6 trials" in found["study"]
