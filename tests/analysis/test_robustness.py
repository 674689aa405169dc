"""Robustness curves from the records sensitivity robustness writes: means over models, intervals, n."""
import numpy as np
import pandas as pd
import pytest

from sensitivity.analysis.figures import robustness as robustness_figure
from sensitivity.analysis.tables.robustness import robustness_curves, robustness_rows
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


def test_white_box_is_a_mean_over_models_with_its_interval_and_n():
    curves = robustness_curves(table({0: record([0.9, 0.4]), 1: record([0.9, 0.6]), 2: record([0.8, 0.2])}))
    white = curves[curves["kind"].eq("white-box")].set_index(["target_framework", "eps"])
    torch = white.loc[("torch", 0.1)]
    assert torch["n"] == 2 and torch["accuracy_mean"] == pytest.approx(0.5)
    # two models: their range, not a t interval 12.7 standard errors wide (-0.77 to 1.77)
    assert (torch["accuracy_low"], torch["accuracy_high"], torch["accuracy_method"]) == (0.4, 0.6, "range")
    assert torch["relative_mean"] == pytest.approx((0.4 / 0.9 + 0.6 / 0.9) / 2)
    assert torch["clean_mean"] == pytest.approx(0.9)
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
    with pytest.raises(NotEnoughData, match="--keep-checkpoints"):
        robustness_curves(table({}))


def test_figure_has_curves_with_n_and_the_matrix_at_the_largest_eps():
    records = {0: record([0.9, 0.4], {"2": {"fgsm": [0.9, 0.7]}}), 1: record([0.9, 0.6]),
               2: record([0.8, 0.2], {"0": {"fgsm": [0.8, 0.6]}})}
    fig = robustness_figure.plot(robustness_figure.compute(table(records)))
    names = [trace.name for trace in fig.data if trace.type == "scatter"]
    assert "torch (n=2 models)" in names and "mxnet (n=1 model)" in names
    relative = [t for t in fig.data if t.type == "scatter" and t.xaxis == "x2"]  # the middle column
    assert {t.name for t in relative} == {"torch (n=2 models)", "mxnet (n=1 model)"}
    assert "clean accuracy 0.900" in relative[0].hovertext[0] or "clean accuracy 0.800" in relative[0].hovertext[0]
    assert max(relative[0].y) <= 1.0 and min(relative[0].y) >= 0
    heatmap = next(trace for trace in fig.data if trace.type == "heatmap")
    cells = dict(zip([(y, x) for y in heatmap.y for x in heatmap.x], [v for row in heatmap.z for v in row]))
    assert cells[("torch", "mxnet")] == pytest.approx(0.6) and cells[("mxnet", "torch")] == pytest.approx(0.7)
    assert cells[("torch", "torch")] == pytest.approx(0.5)  # the diagonal is white-box
    assert any("tested on the column's, eps 0.1" in a.text for a in fig.layout.annotations)


def test_the_area_difference_and_its_bootstrap_over_seeds_and_samples():
    """Per seed, each shared sample's area under A's curve minus B's: the estimate is the mean over seeds of their
    means over the samples both got right; equal seeds give an exact difference, spread ones an interval."""
    from sensitivity.analysis.tables.robustness_pairs import areas, auc_difference

    assert areas(np.array([[1, 0], [0, 0]]), [0.0, 0.1, 0.2]) == pytest.approx([0.75, 0.25])  # trapezoids / 0.2
    shared = np.ones((3, 4))
    exact = auc_difference(np.full((3, 4), 0.1), shared)
    assert exact["estimate"] == pytest.approx(0.1) and exact["low"] == pytest.approx(exact["high"]) == pytest.approx(0.1)
    rng = np.random.default_rng(0)
    diffs = rng.normal(0.05, 0.2, (5, 400))
    mask = (rng.random((5, 400)) < 0.9).astype(float)
    found = auc_difference(diffs, mask, resamples=1000)
    means = (diffs * mask).sum(axis=1) / mask.sum(axis=1)
    assert found["estimate"] == pytest.approx(means.mean()) and found["low"] < found["estimate"] < found["high"]
    assert found["method"] == "paired bootstrap" and 0 < found["p"] < 1 and found["n"] == 5
    assert auc_difference(diffs[:2], mask[:2])["low"] is None  # two seeds: no interval


def test_frameworks_are_compared_only_where_clean_accuracies_agree():
    """A protocol's set of three frameworks: the pair whose clean accuracies agree is compared on the third's
    examples; the pair that does not is not."""
    from sensitivity.analysis.tables.robustness_pairs import robustness_comparisons
    from sensitivity.core.correctness import pack

    rng = np.random.default_rng(1)
    rows = [model(i, fw) for i, fw in enumerate(["torch"] * 3 + ["mxnet"] * 3 + ["jax"] * 3)]
    for row in rows:
        row["seed"] = row["number"] % 3
    clean_of = {"torch": 0.90, "mxnet": 0.91, "jax": 0.60}
    keep_of = {"torch": 0.7, "mxnet": 0.4, "jax": 0.5}
    records = {}
    for row in rows:
        clean = rng.random(500) < clean_of[row["param_framework"]]
        kept = clean & (rng.random(500) < keep_of[row["param_framework"]])
        state = {"samples": 500, "clean": float(clean.mean()), "eps": [0.0, 0.1], "attacks": ["pgd"],
                 "white_box": {"pgd": [float(clean.mean()), float(kept.mean())]},
                 "correct": {"clean": pack(clean), "pgd": [pack(clean), pack(kept)]},
                 "transfer": {}, "transfer_correct": {}}
        for other in rows:
            if other["param_framework"] != row["param_framework"] and other["seed"] == row["seed"]:
                state["transfer_correct"][str(other["number"])] = {"pgd": [pack(clean), pack(kept)]}
        records[row["number"]] = {"published": state, "checkpoints": {}}
    frame = table(records, rows)
    frame.attrs["robustness_protocol"] = {"eps": [0.1], "clean_margin": 0.02, "sets": [
        {"key": "all/native/digits", "kind": "all", "regime": "native", "dataset": "digits", "default": None,
         "members": list(range(9)), "target": None, "matched": None}]}
    pairs = robustness_comparisons(frame).set_index(["framework_a", "framework_b", "kind"])
    fair = pairs.loc[("mxnet", "torch", "transfer")]
    assert fair["comparable"] and fair["primary"] and fair["method"] == "paired bootstrap"
    assert abs(fair["estimate"] + 0.15) < 0.06 and fair["high"] < 0  # areas (1 + kept) / 2: (0.4 - 0.7) / 2
    for pair in (("jax", "mxnet"), ("jax", "torch")):
        assert not pairs.loc[(*pair, "transfer"), "comparable"] and pd.isna(pairs.loc[(*pair, "transfer"), "low"])
        assert "differ by more than 0.02" in pairs.loc[(*pair, "transfer"), "note"]


def test_a_seed_whose_two_models_share_no_correct_sample_is_left_out_of_the_comparison():
    """Two models of one seed that classify disjoint halves correctly have no sample to compare areas on: that
    seed counts for nothing (it once gave numpy's "Mean of empty slice" and a nan area); the others are
    compared, and a pair with no such seed at all says why it was not."""
    import warnings

    from sensitivity.analysis.tables.robustness_pairs import robustness_comparisons
    from sensitivity.core.correctness import pack

    def comparisons(disjoint_seeds):
        rows = [model(i, fw) for i, fw in enumerate(["torch"] * 3 + ["mxnet"] * 3)]
        records = {}
        for row in rows:
            row["seed"] = row["number"] % 3
            first = row["param_framework"] == "torch"
            clean = np.zeros(400, bool)
            if row["seed"] in disjoint_seeds:
                clean[slice(0, 200) if first else slice(200, 400)] = True  # torch one half, mxnet the other
            else:
                clean[:300] = True
            kept = clean & (np.arange(400) % (2 if first else 4) == 0)
            state = {"samples": 400, "clean": float(clean.mean()), "eps": [0.0, 0.1], "attacks": ["pgd"],
                     "white_box": {"pgd": [float(clean.mean()), float(kept.mean())]},
                     "correct": {"clean": pack(clean), "pgd": [pack(clean), pack(kept)]},
                     "transfer": {}, "transfer_correct": {}}
            records[row["number"]] = {"published": state, "checkpoints": {}}
        frame = table(records, rows)
        frame.attrs["robustness_protocol"] = {"eps": [0.1], "clean_margin": 0.3, "sets": [
            {"key": "all/native/digits", "kind": "all", "regime": "native", "dataset": "digits", "default": None,
             "members": list(range(6)), "target": None, "matched": None}]}
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no empty mean, no nan
            return robustness_comparisons(frame).set_index(["framework_a", "framework_b", "kind"])

    white = comparisons({0}).loc[("mxnet", "torch", "white-box")]
    assert white["n_a"] == 2 and white["shared"] == 300 and np.isfinite(white["auc_a"])
    assert abs(white["estimate"] - (-0.125)) < 1e-9  # areas (1 + kept) / 2: (1/4 - 1/2) / 2, over seeds 1 and 2
    none = comparisons({0, 1, 2}).loc[("mxnet", "torch", "white-box")]
    assert none["method"] == "no examples"
    assert none["note"] == "no seed with a test sample both models classify correctly"
