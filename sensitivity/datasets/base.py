"""The in-memory form every loader returns, whatever the source format, and the helpers loaders share.

Only numpy is imported here: a worker in another environment (numpy 1.23, no scikit-learn or scipy) reads
a prepared dataset with `Dataset.load_npz`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sensitivity.core.paths import atomic_write


class DatasetError(Exception):
    """A dataset is missing, corrupt or mismatched; the message names the file and what is wrong."""


@dataclass(frozen=True)
class DatasetInfo:
    """One registry line. `loader` and `files` are "module:function" references, imported lazily.

    Offline sets ship in `package` (a distribution name; its version keys the cache) and `loader()` takes
    no argument. File sets are found by `files(data_dir) -> {role: Path}` and parsed by `loader(files)`.
    """

    name: str
    loader: str
    input_shape: tuple
    classes: int
    default_model: str
    source: str
    offline: bool
    package: str = ""
    files: str = ""
    official_sizes: tuple = ()  # a file set's (training, test) samples, for a forecast made before its files exist

    def __post_init__(self):
        if self.offline != bool(self.package) or self.offline == bool(self.files):
            raise ValueError(f"{self.name}: an offline set names its package, a file set its files function")


@dataclass(frozen=True)
class Dataset:
    """Images as float32 NCHW in [0, 1] (vectors as (N, F)); labels as int64 in [0, classes)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    classes: int

    @property
    def input_shape(self) -> tuple:
        return tuple(self.x_train.shape[1:])

    def check(self, input_shape: tuple | None = None) -> "Dataset":
        """Raise DatasetError unless the arrays keep the contract above; return self."""
        for split, x, y in (("train", self.x_train, self.y_train), ("test", self.x_test, self.y_test)):
            problems = []
            if x.dtype != np.float32 or y.dtype != np.int64:
                problems.append(f"dtypes {x.dtype}/{y.dtype}, expected float32/int64")
            if len(x) != len(y) or len(x) == 0:
                problems.append(f"{len(x)} inputs for {len(y)} labels")
            if input_shape is not None and tuple(x.shape[1:]) != tuple(input_shape):
                problems.append(f"input shape {tuple(x.shape[1:])}, expected {tuple(input_shape)}")
            if x.size and (x.min() < 0 or x.max() > 1):
                problems.append(f"values in [{x.min()}, {x.max()}], expected [0, 1]")
            if y.size and (y.min() < 0 or y.max() >= self.classes):
                problems.append(f"labels in [{y.min()}, {y.max()}], expected [0, {self.classes - 1}]")
            if problems:
                raise DatasetError(f"{self.name} {split} split: " + "; ".join(problems))
        return self

    def save_npz(self, path: Path) -> None:
        """Write atomically, so a reader never sees half a file."""
        with atomic_write(path) as f:
            np.savez(f, name=self.name, classes=self.classes, x_train=self.x_train, y_train=self.y_train,
                     x_test=self.x_test, y_test=self.y_test)

    @classmethod
    def load_npz(cls, path: Path) -> "Dataset":
        with np.load(path, allow_pickle=False) as z:
            return cls(name=str(z["name"]), classes=int(z["classes"]), x_train=z["x_train"],
                       y_train=z["y_train"], x_test=z["x_test"], y_test=z["y_test"])


def split_validation(x: np.ndarray, y: np.ndarray, fraction: float, seed: int):
    """Stratified hold-out of `fraction` of (x, y): returns (x_train, y_train, x_val, y_val)."""
    if fraction <= 0:
        return x, y, x[:0], y[:0]
    rng = np.random.default_rng(seed)
    val_idx = []
    for label in np.unique(y):
        idx = np.flatnonzero(y == label)
        rng.shuffle(idx)
        val_idx.append(idx[: int(round(fraction * len(idx)))])
    val = np.sort(np.concatenate(val_idx))
    keep = np.setdiff1d(np.arange(len(y)), val)
    return x[keep], y[keep], x[val], y[val]


def file_error(path: Path, problem: str) -> DatasetError:
    """The one form of a bad-file error: the path, then what is wrong with it."""
    return DatasetError(f"{path}: {problem}")


def check_labels(labels: np.ndarray, classes: int, path: Path, what: str = "label", first: int = 0) -> None:
    """Raise file_error naming the first record whose label is outside first..first + classes - 1."""
    bad = np.flatnonzero((labels < first) | (labels >= first + classes))
    if bad.size:
        raise file_error(path, f"record {bad[0]} has {what} {labels[bad[0]]}, outside {first}..{first + classes - 1}")


def to_unit_float(pixels: np.ndarray) -> np.ndarray:
    """uint8 pixels 0..255 -> float32 in [0, 1]."""
    x = pixels.astype(np.float32)
    x /= np.float32(255.0)
    return x


def require(module: str):
    """Import an optional dependency, or raise DatasetError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise DatasetError(f"{module} cannot be imported ({e}); install it with: pip install 'sensitivity[data]'") from e
