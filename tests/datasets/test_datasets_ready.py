"""`ready`: a dataset checked (and parsed into the cache) before a sweep starts Ray, never loaded there."""
import pytest

import sensitivity.datasets as datasets
from sensitivity.datasets import DatasetError, cache_root, idx, prepare, ready


def test_a_missing_dataset_says_how_to_get_it(data_dir):
    with pytest.raises(DatasetError, match=r"cifar10: no files found .*sensitivity datasets download cifar10"):
        ready("cifar10", data_dir)
    assert not (cache_root() / "parsed").exists()


def test_ready_parses_once_into_the_cache_and_loads_nothing_after(data_dir, write, monkeypatch):
    write.idx_set(data_dir / "mnist")
    calls = []
    real = idx.load_mnist
    monkeypatch.setattr(idx, "load_mnist", lambda files: calls.append(1) or real(files))
    path = ready("mnist", data_dir)
    loads = []
    with monkeypatch.context() as patched:
        patched.setattr(datasets.Dataset, "load_npz", classmethod(lambda cls, p: loads.append(p)))
        assert ready("mnist", data_dir) == path and calls == [1] and loads == []
    assert prepare("mnist", data_dir) == path and calls == [1]


def test_a_corrupt_file_is_refused_and_nothing_is_cached(data_dir, write):
    write.idx_set(data_dir / "mnist", gz=False)
    (data_dir / "mnist" / "t10k-labels-idx1-ubyte").write_bytes(b"\0\0\x08\x01")
    with pytest.raises(DatasetError, match="t10k-labels-idx1-ubyte: truncated"):
        ready("mnist", data_dir)
    assert not list(cache_root().rglob("*.npz"))


def test_an_operating_system_error_is_a_dataset_error(data_dir, write, monkeypatch, tmp_path):
    write.idx_set(data_dir / "mnist")
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "not-a-folder"))  # the cache cannot be made
    with pytest.raises(DatasetError, match=r"^mnist: .*not-a-folder"):
        ready("mnist", data_dir)
