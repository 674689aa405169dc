"""The defaults table: every entry names its source and the lines it was checked against, its configuration is a
valid trial anywhere, and its budget means the same passes with the same schedule on any dataset."""
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from sensitivity import datasets, frameworks
from sensitivity.config.caffe_import import import_solver
from sensitivity.config.defaults import (CONTEXT, WORDS, Cut, DefaultsError, load_table, quoted_numbers, quoted_value,
                                  trial_fields)
from sensitivity.core.optim import lr_schedule
from sensitivity.core.spec import TrialSpec

pytestmark = pytest.mark.portable
ROOT = Path(__file__).resolve().parents[1]
TABLE = yaml.safe_load((ROOT / "search_spaces" / "defaults.yaml").read_text())
ENTRIES = load_table()
BY_NAME = {e.name: e for e in ENTRIES}
ORIGINS = set(frameworks.FRAMEWORKS) | set(frameworks.CONFIGURATION_ONLY) | {"dlbench"}


def quoted(checked):
    """(file, field, quote) of a checked_against record and its `also`."""
    for line in checked.lines:
        yield checked.file, line.field, line.quote
    for other in checked.also:
        yield from quoted(other)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_entry_is_sourced_and_valid(entry):
    assert entry.framework in ORIGINS
    assert entry.runs_on == "all" or entry.runs_on in frameworks.FRAMEWORKS
    assert entry.dataset in datasets.REGISTRY
    assert entry.source.project and entry.source.file and entry.original_model
    assert "model" not in entry.config  # a default moves between datasets, not its network
    fields, _ = trial_fields(entry, "mnist", steps_per_epoch=100)
    spec = TrialSpec(framework="torch", dataset="mnist5k", **fields)
    assert spec.lr > 0 and spec.batch_size > 0 and spec.iterations >= 1
    assert entry.checked_against is not None, "every entry says where its numbers were read"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_quoted_number_is_the_entrys_own(entry):
    """Parses each number out of the verbatim lines in checked_against and compares it with the configuration
    (load_table does the same, so a table that departs from its sources does not load)."""
    checked = [(file, field, quote) for file, field, quote in quoted(entry.checked_against) if field not in CONTEXT]
    for file, field, quote in checked:
        value = quoted_value(entry, field)
        if isinstance(value, str):
            assert re.search(WORDS[value], quote, re.IGNORECASE), f"{file}: {field} {value!r} not in {quote!r}"
        else:
            for v in (value if isinstance(value, (list, tuple)) else [value]):
                assert any(math.isclose(v, n) for n in quoted_numbers(quote)), f"{file}: {field} {v} not in {quote!r}"
    assert len(checked) >= 3


def test_a_table_whose_number_departs_from_its_quoted_line_is_refused(tmp_path):
    raw = next(e for e in TABLE["defaults"] if e["name"] == "torch-train-on-mnist")
    wrong = {**raw, "config": {**raw["config"], "epochs": 10}}  # the value the table held before: numEpoch = 20
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"defaults": [wrong]}))
    with pytest.raises(DefaultsError, match=r"t.yaml: torch-train-on-mnist.checked_against: epochs 10 is not what its "
                                            r"line says \(models/mnist/torch/train-on-mnist.lua: 'numEpoch = 20'\)"):
        load_table(tmp_path / "t.yaml")


@pytest.mark.parametrize("name", ["torch-train-on-mnist", "torch-train-on-cifar10", "dlbench-shared"])
def test_every_number_of_the_torch_and_dlbench_entries_is_quoted(name):
    entry = BY_NAME[name]
    fields = {field for _, field, _ in quoted(entry.checked_against)}
    wanted = set(entry.config) - {"lr_policy", "gamma", "power"}
    wanted |= {"lr_decay", "power"} if entry.config.get("lr_policy") == "inv" else set()
    wanted |= {f"budget_epochs.{d}" for d in entry.budget_epochs or {}}
    wanted |= {"train_size"} if entry.train_size else set()
    assert wanted <= fields, sorted(wanted - fields)
    repositories = {entry.checked_against.repository} | {o.repository for o in entry.checked_against.also}
    assert repositories & {"git-disl/GTDLBench", "DataSystemsGroupUT/DLBench"}


def test_the_seeds_defaults_are_as_published():
    torch_mnist = BY_NAME["torch-train-on-mnist"].config
    assert (torch_mnist["epochs"], torch_mnist["gamma"], torch_mnist["batch_size"]) == (20, 5e-7, 10)
    assert BY_NAME["torch-train-on-cifar10"].config == {"optimizer": "sgd", "lr": 0.001, "batch_size": 1,
                                                         "lr_policy": "inv", "gamma": 5e-7, "power": 1.0,
                                                         "epochs": 45}
    dlbench = BY_NAME["dlbench-shared"]
    assert dlbench.kind == "shared" and dlbench.own_frameworks(["torch", "mxnet"]) == []
    assert dlbench.config["weight_decay"] == 1e-6 and dlbench.budget_epochs == {
        "mnist": 15, "cifar10": 100, "svhn": 100, "cifar100": 200}
    assert BY_NAME["tensorflow-mnist-deep"].published_epochs("mnist") == pytest.approx(20000 * 50 / 55000)


def test_caffe_entries_come_from_the_caffe_files_through_the_importer():
    raw = {e["name"]: e for e in TABLE["defaults"]}
    assert all("config" not in raw[name] for name in ("caffe-lenet", "caffe-cifar10-quick"))  # one source
    caffe = ROOT / "search_spaces" / "caffe"
    lenet = import_solver(caffe / "lenet_solver.prototxt")["config"]
    assert BY_NAME["caffe-lenet"].config == {k: v for k, v in lenet.items() if k != "model"}
    assert any(note.startswith("lr_mult 2") for note in BY_NAME["caffe-lenet"].notes)
    cifar = BY_NAME["caffe-cifar10-quick"]
    assert cifar.config == {"optimizer": "momentum", "lr": 0.001, "momentum": 0.9, "weight_decay": 0.004,
                            "batch_size": 100, "lr_policy": "multistep", "gamma": 0.1, "stepvalues": [4000],
                            "iterations": 5000}  # multistep over the full 5,000 iterations
    assert any(note.startswith("mean subtraction") for note in cifar.notes)


# the offline sets ship in the data extra, which the legacy environment does not install
needs_data = pytest.mark.skipif(not all(datasets.is_present(d) for d in ("digits", "mnist5k", "mnist1d")),
                                reason="needs sensitivity[data] (the modern environment)")


def steps_of(dataset: str, batch: int) -> int:
    from sensitivity.sweep.plans import steps_per_epoch
    return steps_per_epoch(dataset, batch, 0.2)


@needs_data
@pytest.mark.parametrize("dataset", ["mnist5k", "digits", "mnist1d"])
def test_caffe_lenet_and_chainer_run_their_published_epochs_on_any_dataset(dataset):
    for name, published in (("caffe-lenet", 10000 * 64 / 60000), ("chainer-train-mnist", 20.0)):
        entry = BY_NAME[name]
        per_epoch = steps_of(dataset, entry.config["batch_size"])
        fields, scale = trial_fields(entry, dataset, per_epoch)
        assert scale.budget_scale == 1.0 and scale.published_epochs == pytest.approx(published)
        assert fields["iterations"] / per_epoch == pytest.approx(published, abs=0.5 / per_epoch)


@needs_data
def test_caffe_lenets_inv_rate_ends_where_it_ends_on_mnist():
    entry = BY_NAME["caffe-lenet"]
    per_epoch = steps_of("mnist5k", 64)
    fields, _ = trial_fields(entry, "mnist5k", per_epoch)
    rates = lr_schedule(TrialSpec(framework="torch", dataset="mnist5k", **fields), fields["iterations"])
    published = 0.01 * (1 + 0.0001 * 9999) ** -0.75  # Caffe's last rate on MNIST
    assert rates[-1] == pytest.approx(published, rel=0.01)


@needs_data
def test_mxnets_multistep_default_fires_after_epoch_10_on_mnist5k():
    entry = BY_NAME["mxnet-train-mnist"]
    per_epoch = steps_of("mnist5k", 64)
    fields, scale = trial_fields(entry, "mnist5k", per_epoch)
    rates = lr_schedule(TrialSpec(framework="mxnet", dataset="mnist5k", **fields), fields["iterations"])
    by_epoch = rates.reshape(20, per_epoch)
    assert np.all(by_epoch[:10] == 0.05) and np.allclose(by_epoch[10:], 0.005)  # epochs 11 to 20 at 0.1x
    assert scale.budget_scale == 1.0


def test_a_cut_budget_compresses_the_schedule_and_says_by_how_much():
    fields, scale = trial_fields(BY_NAME["caffe-lenet"], "mnist5k", 50, Cut(epochs=2))
    assert fields["iterations"] == 100 and scale.budget_scale == pytest.approx(2 / (10000 * 64 / 60000))
    rates = lr_schedule(TrialSpec(framework="torch", dataset="mnist5k", **fields), 100)
    assert rates[-1] == pytest.approx(0.01 * (1 + 0.0001 * 9900) ** -0.75, rel=0.02)  # the same rate at the end
    fields, scale = trial_fields(BY_NAME["mxnet-train-mnist"], "mnist5k", 50, Cut(fraction=0.25))
    assert (fields["iterations"], fields["stepvalues"], scale.budget_scale) == (250, (125,), 0.25)
    fields, scale = trial_fields(BY_NAME["chainer-train-mnist"], "mnist5k", 40, Cut(epochs=50))
    assert scale.budget_scale == 1.0 and fields["iterations"] == 800  # never above the published budget


def test_a_budget_below_one_step_or_a_dataset_without_a_budget_is_refused():
    with pytest.raises(DefaultsError, match="below one step"):
        trial_fields(BY_NAME["caffe-lenet"], "mnist5k", 50, Cut(fraction=0.001))
    with pytest.raises(DefaultsError, match="gives no budget for digits"):
        trial_fields(BY_NAME["dlbench-shared"], "digits", 10)


def test_a_bad_entry_names_the_file_the_entry_and_the_field(tmp_path):
    (tmp_path / "s.prototxt").write_text('base_lr: 0.1\nlr_policy: "step"\n')
    entry = {"name": "x", "framework": "caffe", "runs_on": "all", "dataset": "mnist", "original_model": "lenet5",
             "source": {"project": "p", "example": "e", "file": "f"}}
    cases = [({**entry, "caffe_files": ["s.prototxt"]},
              r"x.caffe_files: .*s.prototxt:2: lr_policy step needs stepsize"),
             ({**entry}, r"x: give either config or caffe_files"),
             ({**entry, "config": {"lr": 0.1, "iterations": 100}}, r"x: .*give train_size"),
             ({**entry, "config": {"lr": 0.1}}, r"x: .*published budget as iterations or as epochs"),
             ({**entry, "config": {"lr": 0.1, "epochs": 2, "warp": 1}}, r"x.config: .*warp: unknown field"),
             ({**entry, "kind": "shared", "config": {"lr": 0.1, "epochs": 2}}, r"x: .*budget_epochs per dataset"),
             ({**entry, "config": {"lr": 0.1, "epochs": 2}, "checked_against": {"repository": "r", "commit": "abc",
                                                                                "file": "f", "lines": []}},
              r"x.checked_against.commit")]
    for raw, message in cases:
        (tmp_path / "t.yaml").write_text(yaml.safe_dump({"defaults": [raw]}))
        with pytest.raises(DefaultsError, match=r"t.yaml: " + message):
            load_table(tmp_path / "t.yaml")
