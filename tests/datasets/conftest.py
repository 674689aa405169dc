"""Isolation for every dataset test, and writers of tiny files in the official formats."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from sensitivity.datasets import downloads


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Cache and data directories under tmp_path; the network hook fails the test if called."""
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SENSITIVITY_DATA_DIR", str(tmp_path / "data"))

    def no_network(url):
        raise AssertionError(f"a test tried to download {url}")

    monkeypatch.setattr(downloads, "_fetch", no_network)
    return tmp_path


@pytest.fixture
def data_dir(tmp_path) -> Path:
    d = tmp_path / "data"
    d.mkdir(exist_ok=True)
    return d


def images(n: int, shape: tuple, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, *shape), dtype=np.uint8)


class Write:
    """Writers for the official formats; each returns what it wrote so a test can compare."""

    IDX = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
           "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

    @staticmethod
    def idx(path: Path, array: np.ndarray, magic: int | None = None) -> Path:
        """An IDX file of unsigned bytes; gzipped when the name ends with .gz."""
        array = np.asarray(array, dtype=np.uint8)
        magic = (0x0800 | array.ndim) if magic is None else magic
        header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
        data = header + array.tobytes()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
        return path

    @classmethod
    def idx_set(cls, folder: Path, gz: bool = True, n_train: int = 12, n_test: int = 5) -> dict:
        """A full four-file IDX set; returns {split: (uint8 images, labels)}."""
        written = {}
        for split, n in (("train", n_train), ("test", n_test)):
            x, y = images(n, (28, 28), seed=n), np.arange(n) % 10
            image_name, label_name = cls.IDX[split]
            suffix = ".gz" if gz else ""
            cls.idx(folder / (image_name + suffix), x)
            cls.idx(folder / (label_name + suffix), y)
            written[split] = (x, y)
        return written

    @staticmethod
    def cifar(path: Path, labels: np.ndarray, pixels: np.ndarray) -> Path:
        """Binary CIFAR records: the label byte columns, then 3,072 pixel bytes (CHW order)."""
        labels = np.asarray(labels, dtype=np.uint8).reshape(len(pixels), -1)
        rows = np.concatenate([labels, pixels.reshape(len(pixels), -1).astype(np.uint8)], axis=1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rows.tobytes())
        return path

    @classmethod
    def cifar10_set(cls, folder: Path, batches=(1, 2, 3, 4, 5), n: int = 3, n_test: int = 4) -> dict:
        written = {}
        for i in batches:
            x, y = images(n, (3, 32, 32), seed=i), (np.arange(n) + i) % 10
            written[f"data_batch_{i}.bin"] = (x, y)
            cls.cifar(folder / f"data_batch_{i}.bin", y, x)
        x, y = images(n_test, (3, 32, 32), seed=99), np.arange(n_test) % 10
        written["test_batch.bin"] = (x, y)
        cls.cifar(folder / "test_batch.bin", y, x)
        return written

    @classmethod
    def cifar100_set(cls, folder: Path, n: int = 5, n_test: int = 3) -> dict:
        written = {}
        for name, count, seed in (("train.bin", n, 1), ("test.bin", n_test, 2)):
            fine = (np.arange(count) * 37) % 100
            x = images(count, (3, 32, 32), seed=seed)
            cls.cifar(folder / name, np.stack([fine // 5, fine], axis=1), x)
            written[name] = (x, fine)
        return written

    @staticmethod
    def svhn(path: Path, x_hwcn: np.ndarray, y: np.ndarray) -> Path:
        """A MATLAB v5 file holding X (32, 32, 3, N) uint8 and y (N, 1) with labels 1..10."""
        from scipy.io import savemat
        path.parent.mkdir(parents=True, exist_ok=True)
        savemat(path, {"X": x_hwcn, "y": np.asarray(y).reshape(-1, 1).astype(np.uint8)})
        return path

    @classmethod
    def svhn_set(cls, folder: Path, n: int = 6, n_test: int = 4) -> dict:
        written = {}
        for name, count, seed in (("train_32x32.mat", n, 1), ("test_32x32.mat", n_test, 2)):
            x = images(count, (32, 32, 3), seed=seed).transpose(1, 2, 3, 0)  # (32, 32, 3, N)
            y = np.arange(count) % 10 + 1  # 1..10, 10 meaning the digit 0
            cls.svhn(folder / name, x, y)
            written[name] = (x, y)
        return written


@pytest.fixture
def write() -> type[Write]:
    return Write
