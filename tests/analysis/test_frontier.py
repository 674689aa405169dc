"""The runtime-accuracy frontier: ok trials only, diverged counted but never on it, and its hypervolume."""
import numpy as np
import pytest
from analysis_data import frame

from sensitivity.analysis.tables.frontier import hypervolume, pareto_mask, runtime_accuracy_frontier
from sensitivity.analysis.table import NotEnoughData, trials_table


@pytest.fixture
def table():
    return trials_table(frame(
        {"framework": "torch", "accuracy": 0.90, "train_time_s": 10},
        {"framework": "torch", "accuracy": 0.95, "train_time_s": 20, "is_default": True},
        {"framework": "torch", "accuracy": 0.93, "train_time_s": 30},  # dominated by 0.95 in 20 s
        {"framework": "jax", "accuracy": 0.80, "train_time_s": 5},
        {"framework": "jax", "accuracy": 0.97, "train_time_s": 40},
        {"framework": "torch", "accuracy": 0.10, "train_time_s": 1, "status": "diverged"},  # fast, at chance
        {"framework": "jax", "accuracy": 0.99, "train_time_s": 2, "state": "PRUNED", "status": "pruned"},
        {"framework": "torch", "state": "FAIL", "status": "failed"}))


def test_frontier_holds_only_undominated_ok_trials(table):
    frontier = runtime_accuracy_frontier(table)
    points = frontier.points.set_index("number")
    assert sorted(points.index[points["on_frontier"]]) == [0, 1, 3, 4]
    assert not points.loc[5, "on_frontier"] and points.loc[5, "outcome"] == "diverged"
    assert 6 not in points.index and 7 not in points.index  # pruned and failed are not points at all
    assert sorted(points.index[points["on_framework_frontier"]]) == [0, 1, 3, 4]
    assert points.loc[1, "is_default"] and not points.loc[0, "is_default"]


def test_hypervolume_is_the_dominated_area_up_to_the_shared_reference(table):
    frontier = runtime_accuracy_frontier(table)
    assert frontier.reference_point == (0.0, pytest.approx(44.0))  # 1.1 x the slowest ok trial
    summary = frontier.summary.set_index("scope")
    # all: 5-10 s at 0.80, 10-20 s at 0.90, 20-40 s at 0.95, 40-44 s at 0.97
    assert summary.loc["all", "hypervolume"] == pytest.approx(5 * 0.8 + 10 * 0.9 + 20 * 0.95 + 4 * 0.97)
    assert summary.loc["torch", "hypervolume"] == pytest.approx(10 * 0.9 + 24 * 0.95)
    assert summary.loc["jax", "hypervolume"] == pytest.approx(35 * 0.8 + 4 * 0.97)
    assert summary.loc["all", "hypervolume_fraction"] == pytest.approx(summary.loc["all", "hypervolume"] / 44)


def test_summary_counts_every_final_trial_by_outcome(table):
    summary = runtime_accuracy_frontier(table).summary
    assert summary["scope"].tolist() == ["all", "jax", "torch"]
    row = summary.set_index("scope").loc["all"]
    assert row[["n_trials", "n_ok", "n_diverged", "n_pruned", "n_failed", "n_on_frontier"]].tolist() == \
        [8, 5, 1, 1, 1, 4]
    assert row["best_accuracy"] == 0.97  # the pruned 0.99 and nothing else beyond ok trials
    assert summary.set_index("scope").loc["torch", "n_on_frontier"] == 2


def test_the_frontier_ignores_the_study_objectives():
    # the objective was val_accuracy alone: the frontier still reads accuracy and train_time_s
    table = trials_table(frame({"framework": "torch", "accuracy": 0.9, "train_time_s": 3, "value_0": 0.1},
                               {"framework": "torch", "accuracy": 0.8, "train_time_s": 1, "value_0": 0.99}))
    assert runtime_accuracy_frontier(table).points["on_frontier"].all()


def test_without_an_ok_trial_there_is_no_frontier():
    table = trials_table(frame({"framework": "torch", "accuracy": 0.1, "train_time_s": 1, "status": "diverged"}))
    with pytest.raises(NotEnoughData, match="at least one trial with status ok"):
        runtime_accuracy_frontier(table)


def test_pareto_mask_keeps_ties_and_hypervolume_of_one_point():
    assert pareto_mask(np.array([0.9, 0.9, 0.8]), np.array([1.0, 1.0, 2.0])).tolist() == [True, True, False]
    assert hypervolume(np.array([0.5]), np.array([2.0]), (0.0, 10.0)) == pytest.approx(4.0)


def brute_force_front(accuracy, train_time) -> list:
    """Each point against every other: on the front unless one is at least as good on both and better on one."""
    return [not any(a >= accuracy[i] and t <= train_time[i] and (a > accuracy[i] or t < train_time[i])
                    for a, t in zip(accuracy, train_time)) for i in range(len(accuracy))]


def brute_force_hypervolume(accuracy, train_time, reference) -> float:
    """The union of the boxes from each point to the reference, cell by cell of the grid their corners make."""
    ref_accuracy, ref_time = reference
    boxes = [(t, a) for a, t in zip(accuracy, train_time) if a >= ref_accuracy and t <= ref_time]
    times = sorted({t for t, _ in boxes} | {ref_time})
    accuracies = sorted({a for _, a in boxes} | {ref_accuracy})
    area = 0.0
    for t0, t1 in zip(times, times[1:]):
        for a0, a1 in zip(accuracies, accuracies[1:]):
            if any(t <= t0 and a >= a1 for t, a in boxes):
                area += (t1 - t0) * (a1 - a0)
    return area


@pytest.mark.parametrize("seed", range(30))
def test_pareto_mask_and_hypervolume_agree_with_brute_force_on_random_points(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    coarse = seed % 2 == 0  # few distinct values: ties in accuracy, in time, and equal points
    accuracy = rng.integers(0, 5, n) / 5 if coarse else rng.random(n)
    train_time = rng.integers(1, 6, n).astype(float) if coarse else rng.random(n) * 100
    assert pareto_mask(accuracy, train_time).tolist() == brute_force_front(accuracy, train_time)
    reference = (float(rng.choice([0.0, 0.3])), float(train_time.max() * rng.choice([0.8, 1.1])))
    assert hypervolume(accuracy, train_time, reference) == pytest.approx(
        brute_force_hypervolume(accuracy, train_time, reference), abs=1e-9)


def test_hypervolume_of_no_point_inside_the_reference_box_is_zero():
    assert hypervolume(np.array([0.9]), np.array([20.0]), (0.0, 10.0)) == 0.0
    assert pareto_mask(np.array([]), np.array([])).tolist() == []
