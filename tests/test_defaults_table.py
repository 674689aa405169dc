"""The defaults table: every entry names its source, and its configuration is a valid trial anywhere."""
from pathlib import Path

import pytest
import yaml

from sensitivity import datasets, frameworks
from sensitivity.spec import TrialSpec

pytestmark = pytest.mark.portable
TABLE = yaml.safe_load((Path(__file__).resolve().parents[1] / "search_spaces" / "defaults.yaml").read_text())
ORIGINS = set(frameworks.FRAMEWORKS) | set(frameworks.CONFIGURATION_ONLY) | {"dlbench"}


@pytest.mark.parametrize("entry", TABLE["defaults"], ids=lambda e: e["name"])
def test_entry_is_sourced_and_valid(entry):
    assert entry["framework"] in ORIGINS
    assert entry["runs_on"] == "all" or entry["runs_on"] in frameworks.FRAMEWORKS
    assert entry["dataset"] in datasets.REGISTRY
    assert {"project", "example", "file"} <= set(entry["source"]) and entry["original_model"]
    assert "model" not in entry["config"]  # a default moves between datasets, not its network
    spec = TrialSpec(framework="torch", dataset="mnist5k", **entry["config"])
    assert spec.lr > 0 and spec.batch_size > 0


def test_the_studies_defaults_are_there():
    by_name = {e["name"]: e["config"] for e in TABLE["defaults"]}
    assert by_name["caffe-lenet"] == {"optimizer": "momentum", "lr": 0.01, "momentum": 0.9, "weight_decay": 0.0005,
                                      "lr_policy": "inv", "gamma": 0.0001, "power": 0.75, "batch_size": 64,
                                      "iterations": 10000}
    assert by_name["tensorflow-mnist-deep"]["lr"] == 0.0001 and by_name["tensorflow-mnist-deep"]["batch_size"] == 50
    assert by_name["dlbench-shared"]["momentum"] == 0.5 and by_name["dlbench-shared"]["batch_size"] == 128
    assert by_name["caffe-cifar10-quick"]["stepvalues"] == [4000]


def test_a_budget_compresses_the_schedule_and_says_by_how_much():
    from sensitivity.defaults import load_table, trial_fields
    entries = {e.name: e for e in load_table()}
    fields, scale = trial_fields(entries["caffe-lenet"], steps_per_epoch=50, budget_epochs=2)
    assert scale == pytest.approx(100 / 10000) and fields["epochs"] == 2 and "iterations" not in fields
    assert fields["gamma"] == pytest.approx(0.0001 / scale)  # inv: the same rate at the end of the run
    fields, scale = trial_fields(entries["caffe-cifar10-quick"], steps_per_epoch=100, budget_epochs=10)
    assert fields["stepvalues"] == (800,) and scale == pytest.approx(0.2)
    fields, scale = trial_fields(entries["torch-train-on-mnist"], steps_per_epoch=10, budget_epochs=50)
    assert scale is None and fields["epochs"] == 10  # already within the budget: unchanged
