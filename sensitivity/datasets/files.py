"""Finding a file set's official files in a data directory.

Each file set lists candidate folders in order. The first folder that holds ANY of the set's files is the
one used, and it must then hold every required file: a half-filled folder is an error naming what is
missing, never silently passed over for another folder.
"""
from __future__ import annotations

from pathlib import Path

from .base import DatasetError

Names = dict[str, tuple[str, ...]]  # role -> the accepted file names, the preferred one first


def _first_existing(folder: Path, names: tuple) -> Path | None:
    return next((folder / n for n in names if (folder / n).is_file()), None)


def find_files(dataset: str, folders: list[Path], required: Names, optional: Names | None = None) -> dict[str, Path]:
    """Return {role: path} from the first folder holding any of the files; raise DatasetError otherwise."""
    every = {**required, **(optional or {})}
    for folder in folders:
        found = {role: p for role, names in every.items() if (p := _first_existing(folder, names))}
        if found:
            missing = [" or ".join(names) for role, names in required.items() if role not in found]
            if missing:
                raise DatasetError(f"{dataset}: {folder} lacks {', '.join(missing)}")
            return found
    wanted = ", ".join(names[0] for names in required.values())
    raise DatasetError(
        f"{dataset}: no files found (looked for {wanted} in {', '.join(str(f) for f in folders)}); "
        f"place the official files there, run `sensitivity datasets download {dataset}`, or give a trial --download")
