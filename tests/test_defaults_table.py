"""The defaults table: every entry names its source, and its configuration is a valid trial anywhere."""
from pathlib import Path

import pytest
import yaml

from sensitivity import datasets, frameworks
from sensitivity.caffe_import import import_solver
from sensitivity.defaults import DefaultsError, load_table, trial_fields
from sensitivity.spec import TrialSpec

pytestmark = pytest.mark.portable
ROOT = Path(__file__).resolve().parents[1]
TABLE = yaml.safe_load((ROOT / "search_spaces" / "defaults.yaml").read_text())
ENTRIES = load_table()
ORIGINS = set(frameworks.FRAMEWORKS) | set(frameworks.CONFIGURATION_ONLY) | {"dlbench"}


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_entry_is_sourced_and_valid(entry):
    assert entry.framework in ORIGINS
    assert entry.runs_on == "all" or entry.runs_on in frameworks.FRAMEWORKS
    assert entry.dataset in datasets.REGISTRY
    assert {"project", "example", "file"} <= set(entry.source) and entry.original_model
    assert "model" not in entry.config  # a default moves between datasets, not its network
    spec = TrialSpec(framework="torch", dataset="mnist5k", **entry.config)
    assert spec.lr > 0 and spec.batch_size > 0


def test_the_studies_defaults_are_there():
    by_name = {e.name: e.config for e in ENTRIES}
    assert by_name["caffe-lenet"] == {"optimizer": "momentum", "lr": 0.01, "momentum": 0.9, "weight_decay": 0.0005,
                                      "lr_policy": "inv", "gamma": 0.0001, "power": 0.75, "batch_size": 64,
                                      "iterations": 10000}
    assert by_name["tensorflow-mnist-deep"]["lr"] == 0.0001 and by_name["tensorflow-mnist-deep"]["batch_size"] == 50
    assert by_name["dlbench-shared"]["momentum"] == 0.5 and by_name["dlbench-shared"]["batch_size"] == 128
    assert by_name["caffe-cifar10-quick"]["stepvalues"] == [4000]


def test_caffe_entries_come_from_the_caffe_files_through_the_importer():
    raw = {e["name"]: e for e in TABLE["defaults"]}
    assert all("config" not in raw[name] for name in ("caffe-lenet", "caffe-cifar10-quick"))  # one source
    by_name = {e.name: e for e in ENTRIES}
    caffe = ROOT / "search_spaces" / "caffe"
    lenet = import_solver(caffe / "lenet_solver.prototxt")["config"]
    assert by_name["caffe-lenet"].config == {k: v for k, v in lenet.items() if k != "model"}
    assert any(note.startswith("lr_mult 2") for note in by_name["caffe-lenet"].notes)
    first = import_solver(caffe / "cifar10_quick_solver.prototxt")["config"]
    then = import_solver(caffe / "cifar10_quick_solver_lr1.prototxt")["config"]
    assert (first["iterations"], then["iterations"], then["lr"] / first["lr"]) == (4000, 5000, pytest.approx(0.1))
    cifar = by_name["caffe-cifar10-quick"]
    assert cifar.config == {"optimizer": "momentum", "lr": 0.001, "momentum": 0.9, "weight_decay": 0.004,
                            "batch_size": 100, "lr_policy": "multistep", "gamma": 0.1, "stepvalues": [4000],
                            "iterations": 5000}  # multistep over the full 5,000 iterations
    assert any(note.startswith("mean subtraction") for note in cifar.notes)


def test_a_caffe_entry_that_does_not_import_names_the_entry(tmp_path):
    (tmp_path / "s.prototxt").write_text('base_lr: 0.1\nlr_policy: "step"\n')
    entry = {"name": "x", "framework": "caffe", "runs_on": "all", "dataset": "mnist", "original_model": "lenet5",
             "source": {"project": "p", "example": "e", "file": "f"}}
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"defaults": [{**entry, "caffe_files": ["s.prototxt"]}]}))
    with pytest.raises(DefaultsError, match=r"t.yaml: x.caffe_files: .*s.prototxt:2: lr_policy step needs stepsize"):
        load_table(tmp_path / "t.yaml")
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"defaults": [{**entry}]}))
    with pytest.raises(DefaultsError, match=r"t.yaml: x: give either config or caffe_files"):
        load_table(tmp_path / "t.yaml")


def test_a_budget_compresses_the_schedule_and_says_by_how_much():
    entries = {e.name: e for e in ENTRIES}
    fields, scale = trial_fields(entries["caffe-lenet"], steps_per_epoch=50, budget_epochs=2)
    assert scale == pytest.approx(100 / 10000) and fields["epochs"] == 2 and "iterations" not in fields
    assert fields["gamma"] == pytest.approx(0.0001 / scale)  # inv: the same rate at the end of the run
    fields, scale = trial_fields(entries["caffe-cifar10-quick"], steps_per_epoch=100, budget_epochs=10)
    assert fields["stepvalues"] == (800,) and scale == pytest.approx(0.2)
    fields, scale = trial_fields(entries["torch-train-on-mnist"], steps_per_epoch=10, budget_epochs=50)
    assert scale is None and fields["epochs"] == 10  # already within the budget: unchanged
