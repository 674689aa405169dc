"""Intervals over seeds: Student t for two or more seeds, the mean alone (n=1) for one."""
import math

import pytest
from analysis_data import frame

from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.tables.seeds import framework_comparisons, has_intervals, seed_intervals
from sensitivity.analysis.table import NotEnoughData, trials_table

T_975_2 = 4.302652729911275  # scipy.stats.t.ppf(0.975, 2)


@pytest.fixture
def intervals():
    rows = [{"framework": "torch", "config_id": "a", "lr": 0.01, "seed": s, "accuracy": acc, "train_time_s": t}
            for s, (acc, t) in enumerate([(0.90, 10.0), (0.92, 12.0), (0.94, 14.0)])]
    rows += [{"framework": "jax", "config_id": "b", "lr": 0.01, "seed": 0, "accuracy": 0.85, "train_time_s": 8.0},
             {"framework": "jax", "config_id": "c", "lr": 0.5, "seed": 0, "accuracy": 0.99, "train_time_s": 8.0}]
    return seed_intervals(trials_table(frame(*rows))).set_index("config_id")


def test_intervals_over_three_seeds_are_the_interval_helpers(intervals):
    a = intervals.loc["a"]
    half = T_975_2 * 0.02 / math.sqrt(3)
    assert a["n_seeds"] == 3 and a["accuracy_mean"] == pytest.approx(0.92)
    helper = mean_interval([0.90, 0.92, 0.94], "accuracy")
    assert (a["accuracy_low"], a["accuracy_high"]) == pytest.approx((helper.low, helper.high))
    assert a["accuracy_method"] == "t"
    # accuracy: the hull of Student t and the logit interval, so at least the t interval
    assert a["accuracy_low"] <= 0.92 - half + 1e-9 and a["accuracy_high"] >= 0.92 + half - 1e-9
    assert a["train_time_s_high"] - a["train_time_s_mean"] == pytest.approx(T_975_2 * 2.0 / math.sqrt(3))


def test_two_seeds_give_their_range_and_no_interval():
    rows = [{"framework": "torch", "config_id": "a", "lr": 0.01, "seed": s, "accuracy": acc, "train_time_s": 1.0}
            for s, acc in enumerate([0.2, 0.9])]
    a = seed_intervals(trials_table(frame(*rows))).iloc[0]
    assert (a["accuracy_low"], a["accuracy_high"], a["accuracy_method"]) == (0.2, 0.9, "range")


def test_one_seed_gives_the_mean_and_no_interval(intervals):
    b = intervals.loc["b"]
    assert b["n_seeds"] == 1 and b["accuracy_mean"] == 0.85
    assert math.isnan(b["accuracy_low"]) and math.isnan(b["accuracy_high"])
    assert has_intervals(intervals) and not has_intervals(intervals.drop(index="a"))


def test_configurations_run_by_several_frameworks_are_compared_first(intervals):
    rows = framework_comparisons(intervals.reset_index(), top=1)
    assert set(rows["configuration"]) == {"lr=0.01"}  # shared by torch and jax, though c scores higher
    assert sorted(rows["framework"]) == ["jax", "torch"]


def test_seed_intervals_need_complete_trials():
    with pytest.raises(NotEnoughData):
        seed_intervals(trials_table(frame({"state": "FAIL", "status": "failed", "framework": "torch"})))
