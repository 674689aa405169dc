"""Robustness curves from the records sensitivity robustness writes: means over models, intervals, n."""
import pandas as pd
import pytest

from sensitivity.analysis.robustness import plot_robustness, robustness_curves, robustness_rows
from sensitivity.analysis.table import NotEnoughData, trials_table

EPS = [0.0, 0.1]


def model(number, framework, status="ok"):
    return {"number": number, "state": "COMPLETE", "status": status, "param_framework": framework,
            "dataset": "digits", "accuracy": 0.9, "val_accuracy": 0.9, "train_time_s": 1.0, "seed": number,
            "config_id": framework, "curve": "[]", "value_0": 0.9}


def record(white, transfer=None):
    return {"samples": 100, "clean": white[0], "eps": EPS, "attacks": ["fgsm"], "white_box": {"fgsm": white},
            "transfer": transfer or {}}


def table(records, rows=None):
    frame = trials_table(pd.DataFrame(rows or [model(0, "torch"), model(1, "torch"), model(2, "mxnet")]))
    frame.attrs["robustness"] = records
    return frame


def test_white_box_is_a_mean_over_models_with_a_t_interval_and_n():
    curves = robustness_curves(table({0: record([0.9, 0.4]), 1: record([0.9, 0.6]), 2: record([0.8, 0.2])}))
    white = curves[curves["kind"].eq("white-box")].set_index(["target_framework", "eps"])
    torch = white.loc[("torch", 0.1)]
    assert torch["n"] == 2 and torch["accuracy_mean"] == pytest.approx(0.5)
    # t(0.975, 1) = 12.706; s = 0.1414; half = 12.706 * 0.1414 / sqrt(2) = 1.2706
    assert torch["accuracy_high"] - torch["accuracy_mean"] == pytest.approx(1.2706, rel=1e-3)
    single = white.loc[("mxnet", 0.1)]
    assert single["n"] == 1 and pd.isna(single["accuracy_low"])  # one model: no interval made up
    assert (curves["samples"] == 100).all()


def test_transfer_rows_name_their_source_framework_and_average_over_sources():
    records = {0: record([0.9, 0.4], {"2": {"fgsm": [0.9, 0.7]}, "1": {"fgsm": [0.9, 0.5]}}),
               2: record([0.8, 0.2], {"0": {"fgsm": [0.8, 0.6]}, "1": {"fgsm": [0.8, 0.4]}})}
    rows = robustness_rows(table(records))
    assert set(rows[rows["kind"] == "transfer"]["source_framework"]) == {"torch", "mxnet"}
    curves = robustness_curves(table(records)).set_index(["kind", "source_framework", "target_framework", "eps"])
    # mxnet model 2 tested on both torch models' examples: one target, the mean over its two sources
    assert curves.loc[("transfer", "torch", "mxnet", 0.1), "accuracy_mean"] == pytest.approx(0.5)
    assert curves.loc[("transfer", "torch", "mxnet", 0.1), "n"] == 1
    assert curves.loc[("transfer", "mxnet", "torch", 0.1), "accuracy_mean"] == pytest.approx(0.7)


def test_records_of_untrained_or_unknown_trials_are_left_out():
    rows = [model(0, "torch"), model(1, "torch", status="failed")]
    curves = robustness_curves(table({0: record([0.9, 0.4]), 1: record([0.9, 0.1]), 7: record([0.5, 0.5])}, rows))
    assert set(curves["n"]) == {1} and curves["accuracy_mean"].min() == pytest.approx(0.4)


def test_no_records_says_what_would_fill_it():
    with pytest.raises(NotEnoughData, match="--keep-weights"):
        robustness_curves(table({}))


def test_figure_has_curves_with_n_and_the_matrix_at_the_largest_eps():
    records = {0: record([0.9, 0.4], {"2": {"fgsm": [0.9, 0.7]}}), 1: record([0.9, 0.6]),
               2: record([0.8, 0.2], {"0": {"fgsm": [0.8, 0.6]}})}
    fig = plot_robustness(robustness_curves(table(records)))
    names = [trace.name for trace in fig.data if trace.type == "scatter"]
    assert "torch (n=2 models)" in names and "mxnet (n=1 model)" in names
    heatmap = next(trace for trace in fig.data if trace.type == "heatmap")
    cells = dict(zip([(y, x) for y in heatmap.y for x in heatmap.x], [v for row in heatmap.z for v in row]))
    assert cells[("torch", "mxnet")] == pytest.approx(0.6) and cells[("mxnet", "torch")] == pytest.approx(0.7)
    assert cells[("torch", "torch")] == pytest.approx(0.5)  # the diagonal is white-box
    assert any("at eps 0.1" in a.text for a in fig.layout.annotations)
