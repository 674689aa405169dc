"""The package's layers (pyproject.toml's import-linter contracts, docs/architecture.md) hold, and an import
that breaks them fails the check: a new cycle or an upward import fails CI."""
import shutil
import subprocess
import sys
import tomllib
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


@pytest.mark.parametrize("module, added, contract", [
    ("sweep/plans.py", "from sensitivity.analysis import table\n", "Layers"),  # sweep and analysis are siblings
    ("core/spec.py", "from sensitivity.trial import loop\n", "Layers"),  # upward, from the bottom layer
    ("studies/records.py", "def added():\n    import sensitivity.sweep.driver\n", "Layers"),  # inside a function
    ("frameworks/jax_adapter.py", "def added():\n    from sensitivity.frameworks import torch_adapter\n",
     "Framework adapters do not import one another"),
    ("frameworks/backends/torch.py", "def added():\n    from sensitivity.frameworks import keras_adapter\n",
     "What the adapters share imports no adapter"),
])
def test_an_import_across_the_layers_breaks_them(tmp_path, module, added, contract):
    root = copy_of_package(tmp_path)
    path = root / "sensitivity" / module
    path.write_text(f"{path.read_text()}\n\n{added}")
    result = lint(root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout
    assert f"sensitivity.{module[:-3].replace('/', '.')} ->" in result.stdout


def test_every_adapter_is_under_the_adapters_contracts():
    """A new adapter joins the contracts: one not named there could import another unseen."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    named = {c["name"]: c for c in contracts}
    adapters = {f"sensitivity.frameworks.{p.stem}" for p in (REPO / "sensitivity" / "frameworks").glob("*_adapter.py")}
    assert set(named["Framework adapters do not import one another"]["modules"]) == adapters
    assert set(named["What the adapters share imports no adapter"]["forbidden_modules"]) == adapters
