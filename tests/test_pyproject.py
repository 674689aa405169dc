"""pyproject.toml's extras: every optional dependency says which module needs it, and what an adapter
imports is declared in its extra (and pinned for the setup script). Portable."""
import re
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.portable

ROOT = Path(__file__).resolve().parents[1]


def optional_dependency_lines():
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    return [line for line in section.splitlines() if re.search(r'"[A-Za-z]', line) and "sensitivity[" not in line]


def test_every_optional_dependency_names_the_module_that_needs_it():
    lines = optional_dependency_lines()
    assert len(lines) > 20
    for line in lines:
        comment = line.partition("#")[2]
        assert re.search(r"sensitivity\.\w+|tests/|tool\.pytest", comment), line


def test_threadpoolctl_is_a_dependency_both_environments_pin():
    """Every worker records numpy's BLAS through it (sensitivity.trial.kernels), the legacy one's too."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(req.startswith("threadpoolctl") for req in dependencies)
    for module in ("sensitivity/frameworks/pytensor_adapter.py", "sensitivity/trial/kernels.py"):
        assert "threadpoolctl" in (ROOT / module).read_text()
    for environment in ("modern", "legacy"):
        assert re.search(r"^threadpoolctl==", (ROOT / f"constraints/{environment}.txt").read_text(), re.M)
