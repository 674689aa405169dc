"""Learning curves, slice points and the contour grid."""
import pytest
from analysis_data import frame

from sensitivity.analysis.tables.curves import contour_grid, curve_metric, learning_curves, slice_points
from sensitivity.analysis.table import NotEnoughData, trials_table


def curve(*accuracies, val=True):
    return [{"epoch": i + 1, "train_loss": 1.0 / (i + 1), "val_accuracy": a if val else None, "test_accuracy": a,
             "seconds": 2.0} for i, a in enumerate(accuracies)]


def test_one_row_per_epoch_of_every_trial_that_trained_or_was_pruned():
    table = trials_table(frame(
        {"framework": "torch", "curve": curve(0.5, 0.7, 0.9), "accuracy": 0.9, "is_default": True},
        {"framework": "jax", "curve": curve(0.4), "state": "PRUNED", "status": "pruned"},
        {"framework": "jax", "curve": curve(0.1, 0.1), "status": "diverged", "accuracy": 0.1},
        {"framework": "jax", "curve": [], "state": "FAIL", "status": "failed"}))
    curves = learning_curves(table)
    assert curves.groupby("number")["epoch"].max().to_dict() == {0: 3, 1: 1, 2: 2}
    assert curves.loc[curves["number"] == 0, "val_accuracy"].tolist() == [0.5, 0.7, 0.9]
    assert curves.loc[curves["number"] == 0, "is_default"].all() and not curves.loc[curves["number"] > 0,
                                                                                     "is_default"].any()
    assert set(curves["outcome"]) == {"ok", "pruned", "diverged"} and curve_metric(curves) == "val_accuracy"


def test_curves_without_validation_use_test_accuracy():
    table = trials_table(frame({"framework": "torch", "curve": curve(0.5, 0.6, val=False), "accuracy": 0.6}))
    assert curve_metric(learning_curves(table)) == "test_accuracy"


def test_no_curve_says_what_is_missing():
    with pytest.raises(NotEnoughData, match="per-epoch curve"):
        learning_curves(trials_table(frame({"framework": "torch", "accuracy": 0.9})))


@pytest.fixture
def grid_table():
    rows = [{"framework": "torch", "lr": lr, "momentum": m, "optimizer": "sgd", "accuracy": acc, "train_time_s": 1}
            for lr, m, acc in [(1e-4, 0.0, 0.5), (1e-4, 0.0, 0.7), (1e-2, 0.9, 0.9), (1.0, 0.9, 0.2)]]
    rows.append({**rows[2], "is_default": True, "accuracy": 0.95})
    rows.append({"framework": "torch", "state": "FAIL", "status": "failed", "lr": 0.5, "momentum": 0.5})
    return trials_table(frame(*rows))


def test_slice_points_per_parameter_with_scale(grid_table):
    points = slice_points(grid_table)
    assert len(points) == 5 * 3  # five trained trials x lr, momentum, optimizer (not the failed one)
    scales = points.drop_duplicates("parameter").set_index("parameter")["scale"].to_dict()
    assert scales == {"lr": "log", "momentum": "linear", "optimizer": "category"}
    assert points["is_default"].sum() == 3


def test_contour_means_per_cell_and_default_marks(grid_table):
    grid = contour_grid(grid_table)
    assert set(zip(grid["x_parameter"], grid["y_parameter"])) == {("lr", "momentum")}  # optimizer is not numeric
    cells = grid[~grid["is_default"]].set_index(["x", "y"])["accuracy"]
    assert cells[(1e-4, 0.0)] == pytest.approx(0.6)  # two trials in one cell
    assert cells[(1e-2, 0.9)] == pytest.approx((0.9 + 0.95) / 2)
    marks = grid[grid["is_default"]]
    assert marks[["x", "y", "framework"]].values.tolist() == [[0.01, 0.9, "torch"]]


def test_contour_needs_two_numeric_parameters():
    table = trials_table(frame(*({"framework": "torch", "lr": lr, "accuracy": 0.5} for lr in (0.1, 0.2))))
    with pytest.raises(NotEnoughData, match="two numeric parameters"):
        contour_grid(table)
