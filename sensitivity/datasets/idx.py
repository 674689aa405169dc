"""MNIST and Fashion-MNIST from the official IDX files, gzipped (.gz) or not.

Where the files are looked for (the first folder holding any of them is used, see files.py):
  mnist:          <data_dir>/mnist/, then <data_dir>/ itself
  fashion_mnist:  <data_dir>/fashion_mnist/, then <data_dir>/fashion-mnist/, then <data_dir>/ itself
                  (Fashion-MNIST uses MNIST's file names: the dataset named is what the folder's files are
                  loaded as)
A raw file is preferred to its .gz when both exist. Validated: magic numbers (2051 images, 2049 labels),
28x28 images, a byte count equal to what the header's dimensions need, equal image and label counts,
labels below 10.
"""
from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np

from .base import Dataset, check_labels, file_error, to_unit_float
from .files import find_files

IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
IMAGE_SIZE = (28, 28)
CLASSES = 10
ROLES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
FOLDERS = {"mnist": ("mnist", "."), "fashion_mnist": ("fashion_mnist", "fashion-mnist", ".")}


def _locate(name: str, data_dir: Path) -> dict[str, Path]:
    required = {role: (base, base + ".gz") for role, base in ROLES.items()}
    return find_files(name, [Path(data_dir) / sub for sub in FOLDERS[name]], required)


def mnist_files(data_dir: Path) -> dict[str, Path]:
    return _locate("mnist", data_dir)


def fashion_mnist_files(data_dir: Path) -> dict[str, Path]:
    return _locate("fashion_mnist", data_dir)


def _read_bytes(path: Path) -> bytes:
    data = Path(path).read_bytes()
    if path.name.endswith(".gz"):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise file_error(path, f"not a complete gzip file ({e})") from e
    return data


def read_idx(path: Path, magic: int) -> np.ndarray:
    """Parse one IDX file of unsigned bytes whose magic number must be `magic`."""
    data = _read_bytes(path)
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(data) < header:
        raise file_error(path, f"truncated: {len(data)} bytes, shorter than the {header}-byte IDX header")
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise file_error(path, f"magic number {found}, expected {magic}")
    dims = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    need = header + math.prod(dims)
    if len(data) != need:
        what = "truncated" if len(data) < need else "trailing bytes"
        raise file_error(path, f"{what}: {len(data)} bytes, but header dimensions {dims} need {need}")
    return np.frombuffer(data, np.uint8, offset=header).reshape(dims)


def _split(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images = read_idx(images_path, IMAGES_MAGIC)
    labels = read_idx(labels_path, LABELS_MAGIC)
    if images.shape[1:] != IMAGE_SIZE:
        raise file_error(images_path, f"images are {images.shape[1]}x{images.shape[2]}, expected 28x28")
    if len(images) == 0:
        raise file_error(images_path, "holds no images")
    if len(images) != len(labels):
        raise file_error(labels_path, f"{len(labels)} labels for the {len(images)} images of {images_path}")
    check_labels(labels, CLASSES, labels_path)
    return to_unit_float(images)[:, None], labels.astype(np.int64)


def _load(name: str, files: dict[str, Path]) -> Dataset:
    x_train, y_train = _split(files["train_images"], files["train_labels"])
    x_test, y_test = _split(files["test_images"], files["test_labels"])
    return Dataset(name, x_train, y_train, x_test, y_test, CLASSES)


def load_mnist(files: dict[str, Path]) -> Dataset:
    return _load("mnist", files)


def load_fashion_mnist(files: dict[str, Path]) -> Dataset:
    return _load("fashion_mnist", files)
