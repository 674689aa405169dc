"""The package's layers (pyproject.toml's import-linter contracts, docs/architecture.md) hold, and an import
that breaks them fails the check: a new cycle or an upward import fails CI."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` on the package and pyproject.toml found at `root` (its own copy of the package first on
    the path), without a cache folder."""
    return subprocess.run([str(LINT), "--no-cache", "--no-logo", "--config", str(root / "pyproject.toml")],
                          cwd=root, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin",
                                                                        "PYTHONPATH": str(root)})


def copy_of_package(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "sensitivity", tmp_path / "sensitivity",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_are_kept():
    result = lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module, added", [
    ("sweep/plans.py", "from sensitivity.analysis import table\n"),  # sweep and analysis are siblings
    ("core/spec.py", "from sensitivity.trial import loop\n"),  # upward, from the bottom layer
    ("studies/records.py", "def added():\n    import sensitivity.sweep.driver\n"),  # upward, inside a function
])
def test_an_import_across_the_layers_breaks_them(tmp_path, module, added):
    root = copy_of_package(tmp_path)
    path = root / "sensitivity" / module
    path.write_text(f"{path.read_text()}\n\n{added}")
    result = lint(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Layers BROKEN" in result.stdout
    assert f"sensitivity.{module[:-3].replace('/', '.')} ->" in result.stdout
