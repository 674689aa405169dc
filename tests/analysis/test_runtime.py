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


def test_the_chosen_configurations_are_tested_on_their_fresh_seeds_run_alone():
    """The sweep chooses each framework's best on validation (torch's c0 at 0.97, beyond its worth: its test
    accuracy on the sweep's seeds is 0.95); `sensitivity timing` ran each choice on 3 fresh seeds alone, where torch
    reaches 0.93 and mxnet 0.94: the comparison reads the fresh seeds, and says the choice carries no curse."""
    from sensitivity.analysis.claims.runtime import FRESH, WINNERS_CURSE, tradeoff_comparisons

    sweep_rows, alone_rows = [], []
    for fw, config, val, test, fresh_test, seconds in (("torch", "c0", 0.97, 0.95, 0.93, 3.0),
                                                       ("torch", "c1", 0.90, 0.90, None, 3.0),
                                                       ("mxnet", "c2", 0.95, 0.94, 0.94, 6.0)):
        for seed in range(3):
            sweep_rows.append({"framework": fw, "dataset": "digits", "semantics": "native", "seed": seed,
                               "accuracy": test + 0.002 * seed, "val_accuracy": val + 0.002 * seed,
                               "train_time_s": seconds * 2, "status": "ok", "config_id": config, "parallel": 2})
        if fresh_test is not None:
            for seed in range(3, 6):
                alone_rows.append({"framework": fw, "dataset": "digits", "semantics": "native", "seed": seed,
                                   "accuracy": fresh_test + 0.002 * (seed - 4), "val_accuracy": val,
                                   "train_time_s": seconds + 0.1 * (seed - 4), "status": "ok", "timing": "alone",
                                   "fresh_seed": True, "timed_study": "sweep", "timed_trial": 0,
                                   "config_id": f"alone:{config}"})
    sweep, alone = as_frame(sweep_rows, "sweep"), as_frame(alone_rows, "sweep-alone")
    (pair,) = [c for c in tradeoff_comparisons(sweep, [alone]) if c.unit == "accuracy"]
    assert (pair.subject, pair.reference) == ("torch", "mxnet")  # chosen on validation: torch's 0.97
    assert pair.detail["fresh_seeds"] and pair.detail["timed"] == "alone"
    assert pair.detail["accuracy_a"] == pytest.approx(0.93) and pair.detail["accuracy_b"] == pytest.approx(0.94)
    assert pair.estimate == pytest.approx(-0.01) and pair.n_a == pair.n_b == 3
    assert pair.detail["time_ratio"] == pytest.approx(0.5, rel=0.05)  # 3 s against 6 s, alone
    # without fresh runs, the sweep's own seeds and the curse said
    (cursed,) = [c for c in tradeoff_comparisons(sweep, []) if c.unit == "accuracy"]
    assert not cursed.detail["fresh_seeds"] and cursed.detail["accuracy_a"] == pytest.approx(0.952)
    from sensitivity.analysis.claims.runtime import choice_words
    assert choice_words(pair.detail) == FRESH and choice_words(cursed.detail) == WINNERS_CURSE
