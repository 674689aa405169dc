"""idx.py: MNIST and Fashion-MNIST from IDX files, gzipped or not."""
import gzip

import numpy as np
import pytest

from sensitivity.datasets import REGISTRY, DatasetError, load
from sensitivity.datasets.idx import fashion_mnist_files, mnist_files, read_idx


@pytest.mark.parametrize("gz", [True, False])
def test_a_small_set_loads_with_the_contract(data_dir, write, gz):
    written = write.idx_set(data_dir / "mnist", gz=gz)
    ds = load("mnist", data_dir)
    assert ds.x_train.shape == (12, 1, 28, 28) and ds.x_test.shape == (5, 1, 28, 28)
    assert ds.input_shape == REGISTRY["mnist"].input_shape
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    assert np.allclose(ds.x_train[:, 0], written["train"][0] / 255.0)
    assert np.array_equal(ds.y_test, written["test"][1])
    assert ds.classes == 10


def test_mnist_directly_in_the_data_dir(data_dir, write):
    write.idx_set(data_dir, gz=False)
    assert set(mnist_files(data_dir).values()) == {data_dir / n for pair in write.IDX.values() for n in pair}
    assert load("mnist", data_dir).x_train.shape[0] == 12


def test_raw_file_preferred_to_gz(data_dir, write):
    write.idx_set(data_dir / "mnist", gz=True)
    write.idx_set(data_dir / "mnist", gz=False)
    assert all(not p.name.endswith(".gz") for p in mnist_files(data_dir).values())


def test_fashion_mnist_directly_in_the_data_dir(data_dir, write):
    write.idx_set(data_dir, gz=False)  # the official names, which Fashion-MNIST shares with MNIST
    assert set(fashion_mnist_files(data_dir).values()) == {data_dir / n for pair in write.IDX.values() for n in pair}
    ds = load("fashion_mnist", data_dir)
    assert ds.name == "fashion_mnist" and ds.x_train.shape == (12, 1, 28, 28)


@pytest.mark.parametrize("folder", ["fashion_mnist", "fashion-mnist"])
def test_fashion_mnist_own_folder_comes_first(data_dir, write, folder):
    write.idx_set(data_dir)  # MNIST's files at the top
    write.idx_set(data_dir / folder, n_train=20)
    ds = load("fashion_mnist", data_dir)
    assert ds.name == "fashion_mnist" and ds.x_train.shape == (20, 1, 28, 28)
    assert load("mnist", data_dir).x_train.shape[0] == 12


def test_half_filled_folder_names_the_missing_files(data_dir, write):
    write.idx_set(data_dir / "mnist")
    (data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz").unlink()
    write.idx_set(data_dir)  # a complete set elsewhere must not stand in silently
    with pytest.raises(DatasetError, match=r"mnist.* lacks t10k-labels-idx1-ubyte or t10k-labels-idx1-ubyte\.gz"):
        load("mnist", data_dir)


def test_no_files_says_where_it_looked(data_dir):
    with pytest.raises(DatasetError, match=r"no files found.*sensitivity datasets download mnist"):
        load("mnist", data_dir)


def test_wrong_magic_number(data_dir, write):
    write.idx_set(data_dir / "mnist", gz=False)
    path = write.idx(data_dir / "mnist" / "train-labels-idx1-ubyte", np.arange(12) % 10, magic=2051)
    with pytest.raises(DatasetError, match=f"{path}: magic number 2051, expected 2049"):
        load("mnist", data_dir)


@pytest.mark.parametrize("keep", [-1, -700, 10], ids=["last-byte", "last-image", "inside-header"])
def test_truncated_file(data_dir, write, keep):
    write.idx_set(data_dir / "mnist", gz=False)
    path = data_dir / "mnist" / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:keep])
    with pytest.raises(DatasetError, match=f"{path}: truncated"):
        load("mnist", data_dir)


def test_trailing_bytes(data_dir, write):
    write.idx_set(data_dir / "mnist", gz=False)
    path = data_dir / "mnist" / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(DatasetError, match=f"{path}: trailing bytes"):
        load("mnist", data_dir)


def test_truncated_gzip(data_dir, write):
    write.idx_set(data_dir / "mnist", gz=True)
    path = data_dir / "mnist" / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DatasetError, match=f"{path}: not a complete gzip file"):
        load("mnist", data_dir)


def test_image_and_label_counts_must_agree(data_dir, write):
    write.idx_set(data_dir / "mnist")
    path = write.idx(data_dir / "mnist" / "t10k-labels-idx1-ubyte.gz", np.arange(4))
    with pytest.raises(DatasetError, match=f"{path}: 4 labels for the 5 images"):
        load("mnist", data_dir)


def test_label_out_of_range(data_dir, write):
    write.idx_set(data_dir / "mnist")
    path = write.idx(data_dir / "mnist" / "train-labels-idx1-ubyte.gz", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1])
    with pytest.raises(DatasetError, match=rf"{path}: record 10 has label 10, outside 0\.\.9"):
        load("mnist", data_dir)


def test_images_must_be_28x28(data_dir, write):
    write.idx_set(data_dir / "mnist")
    path = write.idx(data_dir / "mnist" / "train-images-idx3-ubyte.gz", np.zeros((12, 20, 20)))
    with pytest.raises(DatasetError, match=f"{path}: images are 20x20, expected 28x28"):
        load("mnist", data_dir)


def test_read_idx_parses_dimensions(tmp_path, write):
    x = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    path = write.idx(tmp_path / "a.gz", x)
    assert gzip.decompress(path.read_bytes())[:4] == b"\x00\x00\x08\x03"
    assert np.array_equal(read_idx(path, 2051), x)


def test_a_gzip_bomb_is_refused_without_decompressing_it(tmp_path):
    """2 images declared, 64 MiB of zeros inside the gzip: refused after the bytes the header needs plus one."""
    import resource
    import zlib as zlib_module
    header = (2051).to_bytes(4, "big") + (2).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
    compressor = zlib_module.compressobj(9, zlib_module.DEFLATED, 31)  # gzip framing
    body = compressor.compress(header) + b"".join(compressor.compress(bytes(2**20)) for _ in range(64))
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(body + compressor.flush())
    assert path.stat().st_size < 2**20
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DatasetError, match="trailing bytes"):
        read_idx(path, 2051)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 * 1024  # KiB: far below 64 MiB


def test_a_header_claiming_more_than_any_dataset_is_refused(tmp_path):
    header = (2051).to_bytes(4, "big") + (4_000_000_000).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(header))
    with pytest.raises(DatasetError, match="exceed an IDX dataset"):
        read_idx(path, 2051)
