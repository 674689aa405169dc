"""svhn.py: SVHN format 2 .mat files."""
import numpy as np
import pytest

from sensitivity.datasets import REGISTRY, DatasetError, load


def test_a_small_set_loads_with_the_contract(data_dir, write):
    written = write.svhn_set(data_dir / "svhn")
    ds = load("svhn", data_dir)
    assert ds.x_train.shape == (6, 3, 32, 32) and ds.x_test.shape == (4, 3, 32, 32)
    assert ds.input_shape == REGISTRY["svhn"].input_shape
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    assert ds.y_train.tolist() == [1, 2, 3, 4, 5, 6] and ds.y_test.tolist() == [1, 2, 3, 4]
    x_hwcn = written["train_32x32.mat"][0]
    assert np.allclose(ds.x_train, x_hwcn.transpose(3, 2, 0, 1) / 255.0)


def test_label_10_is_the_digit_0_and_pixels_land_in_nchw(data_dir, write):
    x = np.zeros((32, 32, 3, 2), np.uint8)
    x[4, 7, 2, 1] = 255  # row 4, column 7, blue, sample 1
    write.svhn(data_dir / "train_32x32.mat", x, [10, 3])
    write.svhn(data_dir / "test_32x32.mat", x, [10, 10])
    ds = load("svhn", data_dir)
    assert ds.y_train.tolist() == [0, 3] and ds.y_test.tolist() == [0, 0]
    assert ds.x_train[1, 2, 4, 7] == 1.0 and ds.x_train.sum() == 1.0


def test_label_and_image_counts_must_agree(data_dir, write):
    write.svhn_set(data_dir / "svhn")
    path = write.svhn(data_dir / "svhn" / "test_32x32.mat", np.zeros((32, 32, 3, 4), np.uint8), [1, 2, 3])
    with pytest.raises(DatasetError, match=rf"{path}: y has shape \(3, 1\), expected \(4, 1\)"):
        load("svhn", data_dir)


def test_images_must_be_32x32x3(data_dir, write):
    write.svhn_set(data_dir / "svhn")
    path = write.svhn(data_dir / "svhn" / "train_32x32.mat", np.zeros((28, 28, 3, 2), np.uint8), [1, 2])
    with pytest.raises(DatasetError, match=rf"{path}: X is uint8 \(28, 28, 3, 2\)"):
        load("svhn", data_dir)


@pytest.mark.parametrize("bad", [0, 11])
def test_label_out_of_range(data_dir, write, bad):
    write.svhn_set(data_dir / "svhn")
    path = write.svhn(data_dir / "svhn" / "train_32x32.mat", np.zeros((32, 32, 3, 2), np.uint8), [1, bad])
    with pytest.raises(DatasetError, match=rf"{path}: record 1 has label {bad}, outside 1\.\.10"):
        load("svhn", data_dir)


def test_not_a_mat_file(data_dir, write):
    write.svhn_set(data_dir / "svhn")
    path = data_dir / "svhn" / "test_32x32.mat"
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(DatasetError, match=f"{path}: cannot be read as a MATLAB v5 file"):
        load("svhn", data_dir)


def test_missing_variables(data_dir, write):
    from scipy.io import savemat
    write.svhn_set(data_dir / "svhn")
    path = data_dir / "svhn" / "train_32x32.mat"
    savemat(path, {"images": np.zeros((2, 2))})
    with pytest.raises(DatasetError, match=f"{path}: lacks the variables X and y"):
        load("svhn", data_dir)


def test_missing_test_file(data_dir, write):
    write.svhn_set(data_dir / "svhn")
    (data_dir / "svhn" / "test_32x32.mat").unlink()
    with pytest.raises(DatasetError, match="svhn lacks test_32x32.mat"):
        load("svhn", data_dir)


def test_declared_shapes_are_checked_before_anything_is_inflated(data_dir, write, monkeypatch):
    import scipy.io

    from sensitivity.datasets import svhn
    write.svhn_set(data_dir / "svhn", n=6)
    monkeypatch.setattr(svhn, "MAX_IMAGES", 5)
    monkeypatch.setattr(scipy.io, "loadmat", lambda *a, **k: pytest.fail("loadmat was reached"))
    with pytest.raises(DatasetError, match=r"train_32x32.mat: X is declared \(32, 32, 3, 6\): more than 5 images"):
        load("svhn", data_dir)
