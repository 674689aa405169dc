"""cache.py: parsed .npz files keyed by the source files (or the package version), and prepare()."""
import os
from pathlib import Path

import numpy as np
import pytest

import sensitivity.datasets as datasets
from sensitivity.datasets import Dataset, DatasetError, cache_root, load, prepare, resolve_data_dir
from sensitivity.datasets import idx, packaged


@pytest.fixture
def parse_calls(monkeypatch):
    """Count calls of the MNIST parser (the registry looks it up at each load)."""
    calls = []
    real = idx.load_mnist

    def counting(files):
        calls.append(files)
        return real(files)

    monkeypatch.setattr(idx, "load_mnist", counting)
    return calls


def test_second_load_reads_the_cache(data_dir, write, parse_calls):
    write.idx_set(data_dir / "mnist")
    first = load("mnist", data_dir)
    second = load("mnist", data_dir)
    assert len(parse_calls) == 1
    assert np.array_equal(first.x_train, second.x_train) and np.array_equal(first.y_test, second.y_test)
    assert len(list((cache_root() / "parsed").glob("mnist-*.npz"))) == 1


def test_touching_a_file_invalidates(data_dir, write, parse_calls):
    write.idx_set(data_dir / "mnist")
    first_path = prepare("mnist", data_dir)
    labels = data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz"
    stat = labels.stat()
    os.utime(labels, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    second_path = prepare("mnist", data_dir)
    assert second_path != first_path and len(parse_calls) == 2


def test_replacing_a_file_shows_the_new_data(data_dir, write, parse_calls):
    write.idx_set(data_dir / "mnist")
    assert load("mnist", data_dir).y_test.tolist() == [0, 1, 2, 3, 4]
    path = write.idx(data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz", [9, 9, 9, 9, 9])
    os.utime(path, ns=(0, 12345))  # even with an mtime from the past, the size or mtime differs
    assert load("mnist", data_dir).y_test.tolist() == [9, 9, 9, 9, 9]
    assert len(parse_calls) == 2


def test_another_folder_never_stands_in(tmp_path, write, parse_calls):
    a, b = tmp_path / "a", tmp_path / "b"
    write.idx_set(a)
    write.idx_set(b)
    for path in [*a.iterdir(), *b.iterdir()]:
        os.utime(path, ns=(0, 10**18))  # same contents, sizes and mtimes: only the folders differ
    assert prepare("mnist", a) != prepare("mnist", b)
    assert len(parse_calls) == 2


def test_prepare_writes_an_npz_that_load_npz_reads_back(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin", batches=(1, 2))
    path = prepare("cifar10", data_dir)
    assert path.parent == cache_root() / "parsed" and path.suffix == ".npz"
    back, direct = Dataset.load_npz(path), load("cifar10", data_dir)
    assert back.name == "cifar10" and back.classes == 10
    for field in ("x_train", "y_train", "x_test", "y_test"):
        assert np.array_equal(getattr(back, field), getattr(direct, field))
        assert getattr(back, field).dtype == getattr(direct, field).dtype


def test_an_unreadable_cache_entry_is_rebuilt(data_dir, write, parse_calls):
    write.idx_set(data_dir / "mnist")
    path = prepare("mnist", data_dir)
    path.write_bytes(b"not a zip")
    assert load("mnist", data_dir).x_train.shape == (12, 1, 28, 28)
    assert len(parse_calls) == 2 and Dataset.load_npz(path).x_train.shape == (12, 1, 28, 28)


def test_a_loader_breaking_the_contract_is_not_cached(data_dir, write, monkeypatch):
    write.idx_set(data_dir / "mnist")
    monkeypatch.setattr(idx, "load_mnist", lambda files: Dataset(
        "mnist", np.full((2, 1, 28, 28), 255, np.float32), np.zeros(2, np.int64),
        np.zeros((2, 1, 28, 28), np.float32), np.zeros(2, np.int64), 10))
    with pytest.raises(DatasetError, match="mnist train split: values in"):
        load("mnist", data_dir)
    assert not list((cache_root() / "parsed").glob("*.npz"))


def test_offline_sets_key_on_the_package_version(monkeypatch):
    calls = []

    def tiny():
        calls.append(1)
        x = np.zeros((10, 1, 8, 8), np.float32)
        return Dataset("digits", x, np.arange(10), x, np.arange(10), 10)

    monkeypatch.setattr(packaged, "load_digits", tiny)
    monkeypatch.setattr(datasets, "_package_version", lambda info: "1.0")
    first = prepare("digits")
    assert prepare("digits") == first and len(calls) == 1
    monkeypatch.setattr(datasets, "_package_version", lambda info: "2.0")
    assert prepare("digits") != first and len(calls) == 2


def test_directories_follow_the_environment(monkeypatch, tmp_path):
    assert cache_root() == tmp_path / "cache"
    assert resolve_data_dir() == tmp_path / "data"
    assert resolve_data_dir(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("SENSITIVITY_DATA_DIR")
    assert resolve_data_dir() == tmp_path / "cache" / "data"
    monkeypatch.delenv("SENSITIVITY_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "sensitivity"
    assert resolve_data_dir() == Path(tmp_path / "home" / ".cache" / "sensitivity" / "data")
