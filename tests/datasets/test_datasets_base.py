"""base.py: the Dataset contract, split_validation, atomic writes, and a numpy-only import."""
import subprocess
import sys

import numpy as np
import pytest

from sensitivity.datasets.base import (Dataset, DatasetError, DatasetInfo, atomic_write, check_labels,
                                       split_validation, to_unit_float)


def small(**override) -> Dataset:
    fields = dict(name="t", x_train=np.zeros((4, 1, 2, 2), np.float32), y_train=np.arange(4),
                  x_test=np.ones((2, 1, 2, 2), np.float32), y_test=np.arange(2), classes=4)
    fields.update(override)
    return Dataset(**fields)


def test_split_validation_is_stratified():
    y = np.repeat(np.arange(5), [20, 40, 8, 12, 20])
    x = np.arange(len(y))
    x_tr, y_tr, x_val, y_val = split_validation(x, y, 0.25, seed=3)
    assert list(np.bincount(y_val)) == [5, 10, 2, 3, 5]
    assert list(np.bincount(y_tr)) == [15, 30, 6, 9, 15]
    assert sorted(np.concatenate([x_tr, x_val])) == list(x)  # disjoint and complete
    assert np.array_equal(y[x_val], y_val)


def test_split_validation_is_deterministic_and_seeded():
    y = np.arange(200) % 4
    x = np.arange(200)
    first = split_validation(x, y, 0.2, seed=7)
    again = split_validation(x, y, 0.2, seed=7)
    other = split_validation(x, y, 0.2, seed=8)
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[2], other[2])


def test_split_validation_zero_fraction_keeps_everything():
    x_tr, y_tr, x_val, y_val = split_validation(np.arange(10), np.arange(10) % 2, 0.0, seed=0)
    assert len(x_tr) == 10 and len(x_val) == 0 and len(y_val) == 0


def test_check_accepts_the_contract_and_rejects_breaches():
    assert small().check((1, 2, 2)).name == "t"
    with pytest.raises(DatasetError, match="values in"):
        small(x_test=np.full((2, 1, 2, 2), 2.0, np.float32)).check()
    with pytest.raises(DatasetError, match="dtypes float64"):
        small(x_train=np.zeros((4, 1, 2, 2))).check()
    with pytest.raises(DatasetError, match="labels in"):
        small(y_train=np.array([0, 1, 2, 4])).check()
    with pytest.raises(DatasetError, match=r"input shape \(1, 2, 2\), expected \(1, 28, 28\)"):
        small().check((1, 28, 28))
    with pytest.raises(DatasetError, match="4 inputs for 3 labels"):
        small(y_train=np.arange(3)).check()


def test_npz_round_trip(tmp_path):
    ds = small()
    ds.save_npz(tmp_path / "d.npz")
    back = Dataset.load_npz(tmp_path / "d.npz")
    assert back.name == "t" and back.classes == 4
    for field in ("x_train", "y_train", "x_test", "y_test"):
        assert np.array_equal(getattr(back, field), getattr(ds, field))
    assert [p.name for p in tmp_path.iterdir()] == ["d.npz"]


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(target) as f:
            f.write(b"half")
            raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]
    with atomic_write(target) as f:
        f.write(b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["f.bin"]


def test_check_labels_names_file_and_record(tmp_path):
    check_labels(np.array([0, 9]), 10, tmp_path / "a")
    with pytest.raises(DatasetError, match=r"a: record 2 has label 10, outside 0\.\.9"):
        check_labels(np.array([0, 9, 10]), 10, tmp_path / "a")
    with pytest.raises(DatasetError, match=r"record 0 has label 0, outside 1\.\.10"):
        check_labels(np.array([0]), 10, tmp_path / "a", first=1)


def test_to_unit_float():
    x = to_unit_float(np.array([0, 51, 255], np.uint8))
    assert x.dtype == np.float32 and np.allclose(x, [0, 0.2, 1])


def test_dataset_info_requires_package_or_files():
    with pytest.raises(ValueError):
        DatasetInfo("x", "m:f", (1,), 2, "mlp", "s", offline=True)
    with pytest.raises(ValueError):
        DatasetInfo("x", "m:f", (1,), 2, "mlp", "s", offline=False)


@pytest.mark.parametrize("module", ["sensitivity.datasets.base", "sensitivity.datasets"])
def test_import_pulls_in_no_heavy_package(module):
    code = (f"import sys, {module}; heavy = [m for m in sys.modules if m.split('.')[0] in "
            "('sklearn', 'scipy', 'mlxtend', 'mnist1d', 'matplotlib', 'torch', 'tensorflow')]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
