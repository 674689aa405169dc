"""Datasets: an explicit registry, loaders for packaged and official-format data, and a parsed cache.

    load(name)       -> Dataset (float32 NCHW in [0, 1], or (N, F) vectors; int64 labels)
    prepare(name)    -> Path of the cached .npz, which `Dataset.load_npz` reads with numpy alone
    ready(name)      -> the same path, the dataset checked and parsed but not loaded (before a sweep)
    is_present(name) -> whether load can work without a download
    sizes(name)      -> (training, test) samples, the official ones of a file set not present
    download(name)   -> fetch and verify the official files (file sets only)
    info_table()     -> one dict per dataset, for `sensitivity datasets`

Offline sets (digits, mnist5k, mnist1d) ship in packages (extra `sensitivity[data]`); file sets (mnist,
fashion_mnist, cifar10, cifar100, svhn) are read from the data directory: the argument, else
$SENSITIVITY_DATA_DIR, else ~/.cache/sensitivity/data. Each file-set module says where its files go.
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

from . import downloads as _downloads
from .base import Dataset, DatasetError, DatasetInfo, split_validation
from .cache import cache_path, cache_root, cached, files_fingerprint, resolve_data_dir
from .downloads import download
from .registry import REGISTRY, get_info, resolve

__all__ = ["REGISTRY", "Dataset", "DatasetError", "DatasetInfo", "cache_root", "download", "get_info",
           "info_table", "is_present", "load", "prepare", "ready", "resolve_data_dir", "sizes", "split_validation"]


def _package_version(info: DatasetInfo) -> str:
    try:
        return importlib.metadata.version(info.package)
    except importlib.metadata.PackageNotFoundError:
        raise DatasetError(f"{info.name} ships in the {info.package} package, which is not installed: "
                           "pip install 'sensitivity[data]'") from None


def _source(name: str, data_dir, fetch: bool) -> tuple:
    """(info, fingerprint, build) of `name`: what names its cache entry, and how to parse it."""
    info = get_info(name)
    if info.offline:
        return info, [info.package, _package_version(info)], lambda: resolve(info.loader)()
    folder = resolve_data_dir(data_dir)
    if fetch and not is_present(name, folder):
        _downloads.download(name, folder)
    files = resolve(info.files)(folder)
    return info, files_fingerprint(files), lambda: resolve(info.loader)(files)


def _prepared(name: str, data_dir, fetch: bool, load: bool = True) -> tuple:
    try:
        return cached(*_source(name, data_dir, fetch), load)
    except OSError as exc:  # a file unreadable, a folder where a file should be, a cache that cannot be written
        raise DatasetError(f"{name}: {exc.filename or ''}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL in the data folder's path
        raise DatasetError(f"{name}: {exc}") from None


def load(name: str, data_dir: str | Path | None = None, download: bool = False) -> Dataset:
    """The dataset `name`, parsed once and then read from the cache; download=True fetches missing files."""
    return _prepared(name, data_dir, download)[1]


def prepare(name: str, data_dir: str | Path | None = None, download: bool = False) -> Path:
    """Parse (or find in the cache) and return the .npz path a worker reads with `Dataset.load_npz`."""
    return _prepared(name, data_dir, download)[0]


def ready(name: str, data_dir: str | Path | None = None) -> Path:
    """Check, before anything runs, that `name` loads here without a download: it is parsed into the cache
    now if it is not there yet (a corrupt file is refused here, not in a trial). The cached .npz path;
    DatasetError saying what is wrong and how to get the data otherwise."""
    return _prepared(name, data_dir, False, load=False)[0]


def is_present(name: str, data_dir: str | Path | None = None) -> bool:
    """Offline sets: their package is installed. File sets: the required files are in the data directory."""
    info = get_info(name)
    try:
        if info.offline:
            _package_version(info)
        else:
            resolve(info.files)(resolve_data_dir(data_dir))
    except DatasetError:
        return False
    return True


_SIZES: dict = {}  # the cache entry's path (which its content's fingerprint names) -> (training, test) samples


def sizes(name: str) -> tuple:
    """(training, test) samples of `name`: the parsed dataset's, or, for a file set whose files are absent,
    its official sizes (what a forecast made before they are present counts). Nothing is written: a dataset not
    in the cache yet is parsed in memory (a plan is made, and may be refused, before the cache is written)."""
    info = get_info(name)
    if not info.offline and info.official_sizes and not is_present(name):
        return info.official_sizes
    try:
        info, fingerprint, build = _source(name, None, False)
        key = str(cache_path(info.name, fingerprint))
        if key not in _SIZES:
            data = Dataset.load_npz(key) if Path(key).is_file() else build().check(info.input_shape)
            _SIZES[key] = (len(data.y_train), len(data.y_test))
    except (OSError, KeyError) as exc:
        raise DatasetError(f"{name}: {getattr(exc, 'filename', None) or ''}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    except ValueError as exc:
        raise DatasetError(f"{name}: {exc}") from None
    return _SIZES[key]


def info_table(data_dir: str | Path | None = None) -> list[dict]:
    """One row per registered dataset: name, shape, classes, default_model, offline, source, present."""
    return [{"name": info.name, "shape": info.input_shape, "classes": info.classes,
             "default_model": info.default_model, "offline": info.offline, "source": info.source,
             "present": is_present(info.name, data_dir)} for info in REGISTRY.values()]
