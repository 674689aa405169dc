"""Isolation: the best configuration per value of a scientific parameter, averaged over seeds."""
import pytest
from analysis_data import frame

from sensitivity.analysis.tables.isolation import isolation
from sensitivity.analysis.table import NotEnoughData, trials_table


def trial(config, lr, momentum, seed, accuracy, framework="torch", **extra):
    return {"framework": framework, "lr": lr, "momentum": momentum, "seed": seed, "config_id": config,
            "accuracy": accuracy, "train_time_s": 1.0, **extra}


@pytest.fixture
def table():
    return trials_table(frame(
        trial("lucky", 0.001, 0.0, 0, 0.99), trial("lucky", 0.001, 0.0, 1, 0.51),  # mean 0.75
        trial("steady", 0.001, 0.9, 0, 0.80), trial("steady", 0.001, 0.9, 1, 0.80),  # mean 0.80
        trial("fast", 0.1, 0.5, 0, 0.60, is_default=True),
        trial("jax-one", 0.001, 0.5, 0, 0.70, framework="jax")))


def test_best_over_nuisance_parameters_by_the_mean_over_seeds(table):
    rows = isolation(table, parameters=["lr"]).set_index(["value", "framework"])
    best = rows.loc[("0.001", "torch")]
    assert best["best_accuracy"] == pytest.approx(0.80) and best["config_id"] == "steady"  # not the lucky seed
    assert best["n_configs"] == 2 and best["n_seeds"] == 2 and best["nuisance"] == "momentum=0.9"
    assert rows.loc[("0.1", "torch"), "best_accuracy"] == pytest.approx(0.60)
    assert rows.loc[("0.001", "jax"), "n_seeds"] == 1


def test_framework_defaults_are_placed_in_their_bin(table):
    rows = isolation(table, parameters=["lr"]).set_index(["value", "framework"])
    assert rows.loc[("0.1", "torch"), "default_accuracy"] == pytest.approx(0.60)
    assert rows["default_accuracy"].isna().sum() == 2


def test_each_parameter_is_isolated_in_turn(table):
    assert set(isolation(table)["parameter"]) == {"lr", "momentum"}


def test_isolation_needs_a_tuned_parameter():
    with pytest.raises(NotEnoughData, match="at least one tuned parameter"):
        isolation(trials_table(frame({"framework": "torch", "accuracy": 0.9})))
