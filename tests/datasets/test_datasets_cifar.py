"""cifar.py: CIFAR-10 and CIFAR-100 binary records."""
import numpy as np
import pytest

from sensitivity.datasets import REGISTRY, DatasetError, load
from sensitivity.datasets.cifar import cifar10_files


def test_cifar10_loads_every_batch_in_order(data_dir, write):
    written = write.cifar10_set(data_dir / "cifar-10-batches-bin")
    ds = load("cifar10", data_dir)
    assert ds.x_train.shape == (15, 3, 32, 32) and ds.x_test.shape == (4, 3, 32, 32)
    assert ds.input_shape == REGISTRY["cifar10"].input_shape
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    expected_x = np.concatenate([written[f"data_batch_{i}.bin"][0] for i in range(1, 6)])
    expected_y = np.concatenate([written[f"data_batch_{i}.bin"][1] for i in range(1, 6)])
    assert np.allclose(ds.x_train, expected_x / 255.0)
    assert np.array_equal(ds.y_train, expected_y)
    assert np.array_equal(ds.y_test, written["test_batch.bin"][1])


def test_pixels_are_red_then_green_then_blue_planes(data_dir, write):
    planes = np.concatenate([np.full(1024, 10), np.full(1024, 20), np.full(1024, 30)]).reshape(1, 3, 32, 32)
    folder = data_dir / "cifar-10-batches-bin"
    write.cifar(folder / "data_batch_1.bin", [7], planes)
    write.cifar(folder / "test_batch.bin", [3], planes)
    ds = load("cifar10", data_dir)
    assert np.allclose(ds.x_train[0, :, 5, 9], np.array([10, 20, 30]) / 255.0)
    assert ds.y_train.tolist() == [7] and ds.y_test.tolist() == [3]


def test_a_subset_of_batches_loads(data_dir, write):
    write.cifar10_set(data_dir / "cifar10", batches=(2,))
    assert sorted(cifar10_files(data_dir)) == ["test", "train_2"]
    assert load("cifar10", data_dir).x_train.shape[0] == 3


def test_official_names_directly_in_the_data_dir(data_dir, write):
    write.cifar10_set(data_dir, batches=(1, 3))
    assert load("cifar10", data_dir).x_train.shape[0] == 6


def test_missing_test_file(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin")
    (data_dir / "cifar-10-batches-bin" / "test_batch.bin").unlink()
    with pytest.raises(DatasetError, match="cifar-10-batches-bin lacks test_batch.bin"):
        load("cifar10", data_dir)


def test_missing_training_batches(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin", batches=())
    with pytest.raises(DatasetError, match="holds no training batch"):
        load("cifar10", data_dir)


def test_size_not_a_whole_number_of_records(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin")
    path = data_dir / "cifar-10-batches-bin" / "data_batch_3.bin"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DatasetError, match=f"{path}: size 9119 is not a whole number of 3073-byte records"):
        load("cifar10", data_dir)


def test_empty_batch(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin")
    path = data_dir / "cifar-10-batches-bin" / "test_batch.bin"
    path.write_bytes(b"")
    with pytest.raises(DatasetError, match=f"{path}: is empty"):
        load("cifar10", data_dir)


def test_cifar10_label_out_of_range(data_dir, write):
    write.cifar10_set(data_dir / "cifar-10-batches-bin")
    path = write.cifar(data_dir / "cifar-10-batches-bin" / "test_batch.bin", [1, 10], np.zeros((2, 3072)))
    with pytest.raises(DatasetError, match=rf"{path}: record 1 has label 10, outside 0\.\.9"):
        load("cifar10", data_dir)


def test_cifar100_uses_fine_labels(data_dir, write):
    written = write.cifar100_set(data_dir / "cifar-100-binary")
    ds = load("cifar100", data_dir)
    assert ds.classes == 100 and ds.input_shape == REGISTRY["cifar100"].input_shape
    assert ds.x_train.shape == (5, 3, 32, 32) and ds.x_test.shape == (3, 3, 32, 32)
    assert np.array_equal(ds.y_train, written["train.bin"][1]) and ds.y_train.max() > 19
    assert np.allclose(ds.x_test, written["test.bin"][0] / 255.0)


@pytest.mark.parametrize("labels, message", [([[20, 0]], "coarse label 20, outside 0..19"),
                                             ([[0, 100]], "fine label 100, outside 0..99")])
def test_cifar100_label_out_of_range(data_dir, write, labels, message):
    write.cifar100_set(data_dir / "cifar-100-binary")
    path = write.cifar(data_dir / "cifar-100-binary" / "train.bin", labels, np.zeros((1, 3072)))
    with pytest.raises(DatasetError, match=f"{path}: record 0 has {message}"):
        load("cifar100", data_dir)


def test_cifar100_record_size_is_3074(data_dir, write):
    write.cifar100_set(data_dir / "cifar-100-binary")
    path = data_dir / "cifar-100-binary" / "test.bin"
    write.cifar(path, [1, 2, 3], np.zeros((3, 3072)))  # CIFAR-10 records: 3 x 3073 bytes
    with pytest.raises(DatasetError, match="not a whole number of 3074-byte records"):
        load("cifar100", data_dir)


def test_cifar100_missing_file(data_dir, write):
    write.cifar100_set(data_dir / "cifar100")
    (data_dir / "cifar100" / "train.bin").unlink()
    with pytest.raises(DatasetError, match="cifar100 lacks train.bin"):
        load("cifar100", data_dir)
