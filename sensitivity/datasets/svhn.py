"""SVHN format 2 (cropped 32x32 digits) from the official MATLAB files, read with scipy.io.loadmat.

Where the files are looked for (the first folder holding any of them is used, see files.py):
<data_dir>/svhn/, then <data_dir>/ itself; train_32x32.mat and test_32x32.mat (extra_32x32.mat is not used).
X is (32, 32, 3, N) uint8 (height, width, channel, sample) and becomes NCHW; y is (N, 1) with labels
1..10, where 10 stands for the digit 0 and becomes 0.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .base import Dataset, DatasetError, check_labels, file_error, require, to_unit_float
from .files import find_files


def svhn_files(data_dir: Path) -> dict[str, Path]:
    d = Path(data_dir)
    return find_files("svhn", [d / "svhn", d], {"train": ("train_32x32.mat",), "test": ("test_32x32.mat",)})


MAX_IMAGES = 600_000  # SVHN's largest file (extra_32x32.mat) holds 531,131


def read_mat(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Return uint8 images (N, 3, 32, 32) and int64 labels 0..9 from one format-2 file. The shapes its header
    declares are checked first, so a compressed variable is never inflated beyond MAX_IMAGES images."""
    sio = require("scipy.io")
    try:
        declared = {name: shape for name, shape, _ in sio.whosmat(path)}
        for name, limit in (("X", 3 * 32 * 32 * MAX_IMAGES), ("y", MAX_IMAGES)):
            if name in declared and math.prod(declared[name]) > limit:
                raise file_error(path, f"{name} is declared {declared[name]}: more than {MAX_IMAGES:,} images")
        mat = sio.loadmat(path, variable_names=["X", "y"])
    except DatasetError:
        raise
    except Exception as e:  # scipy raises ValueError, TypeError, MatReadError, NotImplementedError (v7.3) ...
        raise file_error(path, f"cannot be read as a MATLAB v5 file ({type(e).__name__}: {e})") from e
    if "X" not in mat or "y" not in mat:
        raise file_error(path, f"lacks the variables X and y (has {sorted(k for k in mat if not k.startswith('__'))})")
    x, y = mat["X"], mat["y"]
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[:3] != (32, 32, 3):
        raise file_error(path, f"X is {x.dtype} {x.shape}, expected uint8 (32, 32, 3, N)")
    if y.ndim != 2 or y.shape[1] != 1 or y.shape[0] != x.shape[3]:
        raise file_error(path, f"y has shape {y.shape}, expected ({x.shape[3]}, 1) to match X {x.shape}")
    if x.shape[3] == 0:
        raise file_error(path, "holds no images")
    labels = y[:, 0].astype(np.int64)
    check_labels(labels, 10, path, first=1)
    return np.ascontiguousarray(x.transpose(3, 2, 0, 1)), labels % 10


def load_svhn(files: dict[str, Path]) -> Dataset:
    x_train, y_train = read_mat(files["train"])
    x_test, y_test = read_mat(files["test"])
    return Dataset("svhn", to_unit_float(x_train), y_train, to_unit_float(x_test), y_test, 10)
