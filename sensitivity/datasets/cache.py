"""Where data and parsed datasets live, and the cache of parsed .npz files.

Cache root: $SENSITIVITY_CACHE_DIR, else ~/.cache/sensitivity. Parsed datasets: <root>/parsed/
<name>-<key>.npz, where the key hashes the dataset name, a format version and either every source file's
absolute path, size and mtime_ns (file sets: another folder's data never stands in, and touching or
replacing a file invalidates) or the providing package and its version (offline sets).
"""
from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Callable

from sensitivity.core.paths import cache_root

from .base import Dataset, DatasetInfo

FORMAT_VERSION = 1  # bump when a parser's output changes, so older cache entries are not reused


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The argument, else $SENSITIVITY_DATA_DIR, else <cache root>/data."""
    chosen = data_dir or os.environ.get("SENSITIVITY_DATA_DIR") or cache_root() / "data"
    return Path(chosen).expanduser()


def files_fingerprint(files: dict[str, Path]) -> list:
    """[role, absolute path, size, mtime_ns] for each source file, in role order."""
    rows = []
    for role in sorted(files):
        stat = files[role].stat()
        rows.append([role, str(files[role].resolve()), stat.st_size, stat.st_mtime_ns])
    return rows


def cache_path(name: str, fingerprint) -> Path:
    blob = json.dumps([name, FORMAT_VERSION, fingerprint], sort_keys=True).encode()
    return cache_root() / "parsed" / f"{name}-{hashlib.sha256(blob).hexdigest()[:20]}.npz"


def cached(info: DatasetInfo, fingerprint, build: Callable[[], Dataset], load: bool = True) -> tuple:
    """Read the entry for this fingerprint, or build, check and save it; return (path, dataset), the dataset
    None where `load` is False and the entry exists."""
    path = cache_path(info.name, fingerprint)
    if path.is_file() and not load:
        return path, None
    if path.is_file():
        try:
            return path, Dataset.load_npz(path)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile):
            pass  # an unreadable entry is rebuilt below
    dataset = build().check(info.input_shape)
    dataset.save_npz(path)
    return path, dataset
