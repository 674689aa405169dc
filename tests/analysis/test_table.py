"""The trial table: which trials it keeps, how it names outcomes, and the shared grouping and binning."""
import types

import numpy as np
import optuna
import pandas as pd
import pytest
from analysis_data import DISTRIBUTIONS, frame, make_study, tell
from optuna.distributions import CategoricalDistribution, FloatDistribution

from sensitivity.analysis.tables.parameter_values import bin_parameter, configuration_label, parameter_distributions
from sensitivity.analysis.table import grouped, parse_curves, storage_description, trained, trials_table
from sensitivity.studies.catalog import trials_frame


def test_study_table_keeps_final_trials_with_their_outcome():
    study = make_study(n_configs=4, seeds=2, failed=2, pruned=1)
    orphan = tell(study, 0, "orphan", state="fail", extra={"orphaned": True})
    surplus = tell(study, 0, "surplus", state="fail", extra={"surplus": True})
    running = study.ask(DISTRIBUTIONS)  # still running: not final
    table = trials_table(study)
    assert not {orphan.number, surplus.number, running.number} & set(table["number"])
    counts = table["outcome"].value_counts().to_dict()
    assert counts.get("failed") == 2 and counts.get("pruned") == 1
    assert counts.get("ok", 0) + counts.get("diverged", 0) == 8
    assert set(trained(table)["outcome"]) <= {"ok", "diverged"}
    assert (table["framework"] == table["param_framework"]).all()
    first = table[table["outcome"] == "ok"].iloc[0]
    assert isinstance(first["curve"], str) and parse_curves([first["curve"]])[0][0]["epoch"] == 1
    assert first["env_host"] == "testhost" and first["framework_version"].endswith("-1.0")
    assert table.attrs["study"] == "analysis-test" and table.attrs["storage"] == "in memory"
    assert set(table.attrs["distributions"]) == set(DISTRIBUTIONS)


def test_a_table_from_an_exported_csv_reads_the_same(tmp_path):
    study = make_study(n_configs=3, seeds=2, failed=1)
    path = tmp_path / "trials.csv"
    trials_frame(study).to_csv(path, index=False)
    from_csv = trials_table(pd.read_csv(path))
    from_study = trials_table(study)
    assert from_csv["outcome"].tolist() == from_study["outcome"].tolist()
    assert parse_curves(from_csv["curve"]) == parse_curves(from_study["curve"])
    assert from_csv["accuracy"].fillna(-1).round(9).tolist() == from_study["accuracy"].fillna(-1).round(9).tolist()
    assert trials_table(from_csv) is from_csv  # already a table: returned as it is


def test_missing_seed_and_config_id_fall_back_to_defaults():
    table = trials_table(frame({"framework": "torch", "accuracy": 0.9, "train_time_s": 1.0, "seed": None},
                               {"framework": "torch", "accuracy": 0.8, "train_time_s": 2.0}))
    assert table["seed"].tolist() == [0, 0]
    assert table["config_id"].tolist() == ["#0", "#1"]  # each trial its own configuration


def test_storage_is_described_without_its_password():
    backend = types.SimpleNamespace(url="postgresql://analyst:s3cret@db.example/optuna")
    study = types.SimpleNamespace(_storage=types.SimpleNamespace(_backend=backend))
    described = storage_description(study)
    assert "s3cret" not in described and "analyst" in described and "db.example/optuna" in described


def test_grouped_counts_trials_seeds_and_outcomes():
    table = trials_table(frame(
        {"framework": "jax", "seed": 0, "accuracy": 0.9}, {"framework": "jax", "seed": 1, "accuracy": 0.7},
        {"framework": "jax", "seed": 1, "status": "diverged", "accuracy": 0.1},
        {"framework": "torch", "seed": 0, "state": "FAIL", "status": "failed"},
        {"framework": "torch", "seed": 0, "state": "PRUNED", "status": "pruned", "accuracy": 0.5}))
    out = grouped(table, outcomes=True, best=("accuracy", "max")).set_index("framework")
    assert out.loc["jax", ["n_trials", "n_seeds", "n_ok", "n_diverged", "n_failed"]].tolist() == [3, 2, 2, 1, 0]
    assert out.loc["torch", ["n_trials", "n_seeds", "n_pruned", "n_failed"]].tolist() == [2, 1, 1, 1]
    assert out.loc["jax", "best"] == 0.9


def test_numeric_bins_follow_the_distribution_scale():
    values = pd.Series([1e-4, 9e-4, 1.1e-3, 0.5, 1.0])
    bins = bin_parameter(values, FloatDistribution(1e-4, 1.0, log=True), bins=4)
    assert bins["order"].tolist() == [0, 0, 1, 3, 3]  # decades: [1e-4, 1e-3), [1e-3, 1e-2), ..., [0.1, 1]
    assert bins["value"].iloc[0] == "[0.0001, 0.001)" and bins["value"].iloc[-1] == "[0.1, 1]"
    assert np.isclose(bins["centre"].iloc[0], 10 ** -3.5)
    linear = bin_parameter(values, FloatDistribution(0.0, 1.0), bins=4)
    assert linear["order"].tolist() == [0, 0, 0, 2, 3]


def test_categories_and_few_numbers_are_their_own_bins():
    optimizer = bin_parameter(pd.Series(["sgd", "adam", "sgd"]), CategoricalDistribution(("sgd", "adam")))
    assert optimizer["value"].tolist() == ["sgd", "adam", "sgd"] and optimizer["order"].tolist() == [1, 0, 1]
    batch = bin_parameter(pd.Series([64, 16, 256, 64]), parameter_distributions(
        trials_table(frame(*({"batch_size": b} for b in (64, 16, 256)))))["batch_size"])
    assert batch["value"].tolist() == ["64", "16", "256", "64"] and batch["order"].tolist() == [1, 0, 2, 1]


def test_distributions_are_inferred_when_the_table_has_none():
    table = trials_table(frame(*({"framework": "torch", "lr": lr, "batch_size": b, "optimizer": o}
                                 for lr, b, o in [(1e-4, 16, "sgd"), (0.1, 256, "adam"), (0.01, 64, "sgd")])))
    dists = parameter_distributions(table)
    assert dists["lr"].log and isinstance(dists["lr"], optuna.distributions.FloatDistribution)
    assert isinstance(dists["batch_size"], optuna.distributions.IntDistribution)
    assert not dists["batch_size"].log  # 16 to 256: less than two decades
    assert dists["optimizer"].choices == ("adam", "sgd") and dists["framework"].single()


def test_configuration_labels_skip_missing_values():
    table = trials_table(frame({"lr": 0.01, "momentum": 0.9}, {"lr": 0.1, "momentum": None}))
    assert configuration_label(table, ["lr", "momentum"]).tolist() == ["lr=0.01, momentum=0.9", "lr=0.1"]
    assert configuration_label(table, []).tolist() == ["default", "default"]


@pytest.mark.parametrize("rows", [(), ({"state": "RUNNING"},)])
def test_a_study_without_final_trials_gives_an_empty_table(rows):
    table = trials_table(frame(*rows))
    assert table.empty and "outcome" in table


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_file_storages_are_named(tmp_path, kind):
    from sensitivity.studies.storage import open_storage

    url = f"sqlite:///{tmp_path}/s.db" if kind == "sqlite" else f"journal:{tmp_path}/s.journal"
    study = optuna.create_study(study_name="named", storage=open_storage(url))
    assert storage_description(study) == url


def test_the_table_module_reads_and_groups_and_parameter_values_are_their_own():
    """Issue 32: table.py under 400 lines; the values' bins and labels have one home, not two import paths."""
    import pathlib

    from sensitivity.analysis import table
    from sensitivity.analysis.tables import parameter_values

    for module in (table, parameter_values):
        assert len(pathlib.Path(module.__file__).read_text().splitlines()) < 400, module.__name__
    for name in ("bin_parameter", "configuration_label", "parameter_distributions", "format_value",
                 "numeric_sort_key", "is_categorical", "is_numeric_choice", "is_number"):
        assert hasattr(parameter_values, name) and not hasattr(table, name), name
