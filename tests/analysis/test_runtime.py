"""Runtime beside accuracy (sensitivity.analysis.tables.runtime): time to a target validation accuracy and accuracy at
equal wall-clock from the curves of the same configuration on every framework, and the sweep's times against the
same configurations timed alone."""
import json

import pytest
from planted import as_frame

from sensitivity.analysis.tables.runtime import parallel_ratios, ratios_text, same_configuration_times


def curve(seconds: float, accuracies: list) -> str:
    return json.dumps([{"epoch": e + 1, "seconds": seconds, "val_accuracy": a} for e, a in enumerate(accuracies)])


def defaults_rows() -> list:
    """One default on two frameworks, two seeds each: tensorflow's epochs take 1 s and torch's 2 s."""
    runs = {"tensorflow": (1.0, [[0.5, 0.8, 0.9], [0.6, 0.7, 0.9]]), "torch": (2.0, [[0.7, 0.95, 0.96],
                                                                                      [0.9, 0.92, 0.94]])}
    return [{"framework": framework, "dataset": "digits", "semantics": "native", "default": "d", "seed": seed,
             "accuracy": accs[-1], "val_accuracy": accs[-1], "train_time_s": seconds * len(accs), "status": "ok",
             "curve": curve(seconds, accs), "config_id": f"default:d:{framework}"}
            for framework, (seconds, per_seed) in runs.items() for seed, accs in enumerate(per_seed)]


def test_time_to_target_and_accuracy_at_equal_wall_clock_come_from_the_curves():
    times = same_configuration_times(as_frame(defaults_rows(), "transfer")).set_index("framework")
    # target: the lower mean final validation accuracy, tensorflow's 0.9; torch reaches it at epoch 2 and 1
    assert times["target"].tolist() == pytest.approx([0.9, 0.9])
    assert times.loc["tensorflow", "time_to_target"] == pytest.approx(3.0)
    assert times.loc["torch", "time_to_target"] == pytest.approx((4.0 + 2.0) / 2)
    assert times["reached"].tolist() == [2, 2]
    # equal wall-clock: 3 s, tensorflow's mean train time; torch has finished one epoch by then
    assert times.loc["torch", "at_budget"] == pytest.approx((0.7 + 0.9) / 2)
    assert times.loc["tensorflow", "at_budget"] == pytest.approx(0.9)


def test_a_framework_that_never_reaches_the_target_is_counted_not_timed():
    rows = defaults_rows()
    for row in rows:  # torch now learns less: its runs never reach tensorflow's 0.9 before their end
        if row["framework"] == "torch":
            row["curve"] = curve(2.0, [0.5, 0.6, 0.85])
            row["val_accuracy"] = 0.85
    times = same_configuration_times(as_frame(rows, "transfer")).set_index("framework")
    assert times.loc["torch", "target"] == pytest.approx(0.85) and times.loc["tensorflow", "reached"] == 2
    assert same_configuration_times(as_frame([r for r in rows if r["framework"] == "torch"], "t")).empty


def sweep_and_alone(factor: float) -> tuple:
    sweep = [{"framework": fw, "dataset": "digits", "semantics": "native", "seed": 0, "accuracy": 0.9,
              "val_accuracy": 0.9, "train_time_s": 10.0 + i, "status": "ok", "config_id": f"c{i}", "parallel": 2}
             for i, fw in enumerate(["torch", "torch", "torch", "mxnet", "mxnet"])]
    alone = [{"framework": row["framework"], "dataset": "digits", "semantics": "native", "seed": 0, "accuracy": 0.9,
              "val_accuracy": 0.9, "train_time_s": row["train_time_s"] / factor, "status": "ok", "timing": "alone",
              "timed_study": "sweep", "timed_trial": number, "config_id": f"alone:{row['config_id']}"}
             for number, row in enumerate(sweep) if number != 4]  # mxnet's second configuration was not timed
    return as_frame(sweep, "sweep"), as_frame(alone, "sweep-alone")


def test_the_sweeps_times_are_put_beside_the_same_configurations_alone():
    sweep, alone = sweep_and_alone(1.5)
    ratios = parallel_ratios(sweep, [alone]).set_index("framework")
    assert ratios.loc["torch", "configurations"] == 3 and ratios.loc["mxnet", "configurations"] == 1
    assert ratios["ratio"].tolist() == pytest.approx([1.5, 1.5])
    assert ratios.loc["torch", "parallel"] == 2
    text = ratios_text(ratios.reset_index())
    assert "ran at --parallel 2" in text
    assert "torch 1.50x [1.50, 1.50] (3 configurations)" in text and "mxnet 1.50x (1 configuration)" in text


def test_without_alone_runs_of_this_sweep_the_text_says_how_to_get_them():
    sweep, alone = sweep_and_alone(1.5)
    other = alone.copy()
    other["timed_study"] = "another-sweep"
    assert parallel_ratios(sweep, []).empty and parallel_ratios(sweep, [sweep, other]).empty
    assert "sensitivity timing SWEEP" in ratios_text(parallel_ratios(sweep, [other]))


def test_a_regime_the_sweep_never_ran_is_not_said_to_have_no_trial_finished_ok():
    """The canonical runtime line of a native sweep said no trial "finished with status ok" when none ran."""
    import numpy as np
    from planted import transfer_rows

    from sensitivity.analysis.claims.findings import findings

    sweep = as_frame(defaults_rows(), "native-sweep")
    canonical = as_frame(transfer_rows(np.random.default_rng(0), regimes=("canonical",)), "canonical-transfer")
    found = findings(sweep, [canonical]).claims.set_index(["semantics", "claim"])
    assert found.loc[("canonical", "runtime-accuracy"), "sentence"].endswith(
        "Not tested: the main study (a sweep) ran no trial in this regime.")
    assert "finished with status ok" not in found.loc[("canonical", "runtime-accuracy"), "sentence"]
