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


MAX_SAMPLES = 10_000_000  # far above any IDX dataset (MNIST has 70,000): a header claiming more is refused


def _expected_size(path: Path, head: bytes, magic: int) -> int:
    """The byte count an IDX file of `magic` must have, from its header; raises on a wrong header."""
    ndim = magic & 0xFF
    header = 4 + 4 * ndim
    if len(head) < header:
        raise file_error(path, f"truncated: {len(head)} bytes, shorter than the {header}-byte IDX header")
    found = int.from_bytes(head[:4], "big")
    if found != magic:
        raise file_error(path, f"magic number {found}, expected {magic}")
    dims = tuple(int.from_bytes(head[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    if dims[0] > MAX_SAMPLES or math.prod(dims[1:]) > 28 * 28:
        raise file_error(path, f"header dimensions {dims} exceed an IDX dataset's ({MAX_SAMPLES:,} samples "
                               "of at most 28x28)")
    return header + math.prod(dims)


def _read_bytes(path: Path, magic: int) -> bytes:
    """The file's bytes, a .gz decompressed no further than its header's dimensions need plus one byte, so
    that a gzip bomb is refused after a few bytes too many instead of filling the memory."""
    if not path.name.endswith(".gz"):
        return Path(path).read_bytes()
    try:
        with gzip.open(path, "rb") as stream:
            head = stream.read(4 + 4 * (magic & 0xFF))
            need = _expected_size(path, head, magic)
            return head + stream.read(need - len(head) + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise file_error(path, f"not a complete gzip file ({e})") from e


def read_idx(path: Path, magic: int) -> np.ndarray:
    """Parse one IDX file of unsigned bytes whose magic number must be `magic`."""
    data = _read_bytes(path, magic)
    need = _expected_size(path, data, magic)
    if len(data) != need:
        what = "truncated" if len(data) < need else "trailing bytes"
        raise file_error(path, f"{what}: {len(data)} bytes, but header dimensions {data_dims(data, magic)} "
                               f"need {need}")
    header = 4 + 4 * (magic & 0xFF)
    return np.frombuffer(data, np.uint8, offset=header).reshape(data_dims(data, magic))


def data_dims(data: bytes, magic: int) -> tuple:
    return tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(magic & 0xFF))


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
