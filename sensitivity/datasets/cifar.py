"""CIFAR-10 and CIFAR-100 from the official BINARY versions (the python versions are pickles: never read).

Where the files are looked for (the first folder holding any of them is used, see files.py):
  cifar10:   <data_dir>/cifar-10-batches-bin/ (what cifar-10-binary.tar.gz unpacks to), <data_dir>/cifar10/,
             then <data_dir>/ itself; data_batch_1.bin .. data_batch_5.bin and test_batch.bin.
             A subset of the training batches is fine (at least one); the test batch is required.
  cifar100:  <data_dir>/cifar-100-binary/, <data_dir>/cifar100/, then <data_dir>/ itself; train.bin, test.bin.
A record is the label byte(s) then 3,072 pixel bytes (1,024 red, 1,024 green, 1,024 blue, each 32x32
row-major), which is already CHW. CIFAR-10: 1 label byte (< 10). CIFAR-100: a coarse label byte (< 20)
then a fine one (< 100); the fine label is the class.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .base import Dataset, check_labels, file_error, to_unit_float
from .files import find_files

PIXELS = 3 * 32 * 32
TRAIN_BATCHES = {f"train_{i}": (f"data_batch_{i}.bin",) for i in range(1, 6)}


def cifar10_files(data_dir: Path) -> dict[str, Path]:
    d = Path(data_dir)
    files = find_files("cifar10", [d / "cifar-10-batches-bin", d / "cifar10", d],
                       {"test": ("test_batch.bin",)}, TRAIN_BATCHES)
    if not any(role in files for role in TRAIN_BATCHES):
        raise file_error(files["test"].parent, "holds no training batch (data_batch_1.bin .. data_batch_5.bin)")
    return files


def cifar100_files(data_dir: Path) -> dict[str, Path]:
    d = Path(data_dir)
    return find_files("cifar100", [d / "cifar-100-binary", d / "cifar100", d],
                      {"train": ("train.bin",), "test": ("test.bin",)})


CIFAR10_LABELS = (("label", 10),)
CIFAR100_LABELS = (("coarse label", 20), ("fine label", 100))


def read_records(path: Path, label_bytes: tuple[tuple[str, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Parse a binary batch whose records start with one byte per (name, classes) in `label_bytes`.

    Returns uint8 images (N, 3, 32, 32) and the labels (N, len(label_bytes)), each checked in range.
    """
    width = len(label_bytes)
    record = width + PIXELS
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0:
        raise file_error(path, "is empty")
    if raw.size % record:
        raise file_error(path, f"size {raw.size} is not a whole number of {record}-byte records "
                               f"({raw.size // record} records and {raw.size % record} bytes over)")
    rows = raw.reshape(-1, record)
    for column, (what, classes) in enumerate(label_bytes):
        check_labels(rows[:, column], classes, path, what)
    return rows[:, width:].reshape(-1, 3, 32, 32), rows[:, :width]


def load_cifar10(files: dict[str, Path]) -> Dataset:
    batches = [read_records(files[role], CIFAR10_LABELS) for role in TRAIN_BATCHES if role in files]
    x_test, y_test = read_records(files["test"], CIFAR10_LABELS)
    x_train = np.concatenate([x for x, _ in batches])
    y_train = np.concatenate([y[:, 0] for _, y in batches])
    return Dataset("cifar10", to_unit_float(x_train), y_train.astype(np.int64),
                   to_unit_float(x_test), y_test[:, 0].astype(np.int64), 10)


def load_cifar100(files: dict[str, Path]) -> Dataset:
    x_train, y_train = read_records(files["train"], CIFAR100_LABELS)
    x_test, y_test = read_records(files["test"], CIFAR100_LABELS)
    return Dataset("cifar100", to_unit_float(x_train), y_train[:, 1].astype(np.int64),
                   to_unit_float(x_test), y_test[:, 1].astype(np.int64), 100)
