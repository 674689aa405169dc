"""The registry and the public functions of sensitivity.datasets."""
import re

import pytest

import sensitivity.datasets as datasets
from sensitivity.datasets import (REGISTRY, DatasetError, get_info, info_table, is_present, load, prepare)
from sensitivity.datasets.downloads import PINS
from sensitivity.datasets.registry import resolve

MODELS = {"lenet5", "cifar10_quick", "mlp", "tf_mnist_deep"}


def test_unknown_name_lists_the_allowed_names():
    with pytest.raises(DatasetError) as err:
        load("imagenet")
    message = str(err.value)
    assert "'imagenet'" in message
    assert all(name in message for name in REGISTRY)
    for function in (prepare, is_present, get_info, datasets.download):
        with pytest.raises(DatasetError, match="unknown dataset"):
            function("imagenet")


def test_the_registry_holds_the_documented_sets():
    assert set(REGISTRY) == {"digits", "digits-a", "digits-b", "mnist5k", "mnist5k-a", "mnist5k-b", "mnist1d", "mnist",
                             "fashion_mnist", "cifar10",
                             "cifar100", "svhn"}
    assert {n for n, i in REGISTRY.items() if i.offline} == {"digits", "digits-a", "digits-b", "mnist5k", "mnist5k-a",
                                                             "mnist5k-b", "mnist1d"}
    assert REGISTRY["cifar100"].classes == 100 and REGISTRY["mnist1d"].input_shape == (40,)
    assert {n: i.default_model for n, i in REGISTRY.items()} == {
        "digits": "mlp", "digits-a": "mlp", "digits-b": "mlp", "mnist1d": "mlp", "mnist5k": "lenet5",
        "mnist5k-a": "lenet5", "mnist5k-b": "lenet5",
        "mnist": "lenet5", "fashion_mnist": "lenet5",
        "cifar10": "cifar10_quick", "cifar100": "cifar10_quick", "svhn": "cifar10_quick"}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_entry_resolves(name):
    info = REGISTRY[name]
    assert info.name == name and info.default_model in MODELS and info.source and "\n" not in info.source
    assert re.fullmatch(r"[\w.]+:\w+", info.loader) and callable(resolve(info.loader))
    if info.offline:
        assert info.package and not info.files
    else:
        assert callable(resolve(info.files)) and name in PINS


def test_is_present(data_dir, write):
    assert all(is_present(name) for name in ("digits", "mnist5k", "mnist1d"))
    assert not is_present("svhn", data_dir)
    write.svhn_set(data_dir / "svhn")
    assert is_present("svhn", data_dir) and is_present("svhn")  # SENSITIVITY_DATA_DIR points at data_dir
    (data_dir / "svhn" / "test_32x32.mat").unlink()
    assert not is_present("svhn", data_dir)


def test_a_missing_package_makes_an_offline_set_absent(monkeypatch):
    monkeypatch.setitem(REGISTRY, "digits", datasets.DatasetInfo(
        "digits", "sensitivity.datasets.packaged:load_digits", (1, 8, 8), 10, "mlp", "s", True,
        package="no-such-distribution-xyz"))
    assert not is_present("digits")
    with pytest.raises(DatasetError, match="no-such-distribution-xyz package, which is not installed"):
        load("digits")


def test_info_table(data_dir, write):
    write.cifar100_set(data_dir / "cifar-100-binary")
    rows = {row["name"]: row for row in info_table(data_dir)}
    assert list(rows) == list(REGISTRY)
    assert rows["cifar100"] == {"name": "cifar100", "shape": (3, 32, 32), "classes": 100,
                                "default_model": "cifar10_quick", "offline": False,
                                "source": REGISTRY["cifar100"].source, "present": True}
    assert rows["digits"]["present"] and not rows["mnist"]["present"]


def test_load_with_download_fetches_only_when_absent(data_dir, write, monkeypatch):
    fetched = []

    def fake_download(name, folder):
        fetched.append((name, folder))
        write.cifar100_set(folder / "cifar-100-binary")
        return "ok"

    monkeypatch.setattr(datasets._downloads, "download", fake_download)
    with pytest.raises(DatasetError, match="no files found"):
        load("cifar100", data_dir)
    assert load("cifar100", data_dir, download=True).classes == 100
    assert fetched == [("cifar100", data_dir)]
    load("cifar100", data_dir, download=True)
    assert len(fetched) == 1
