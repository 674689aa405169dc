"""The package's layers (pyproject.toml's import-linter contracts, docs/architecture.md) hold, and an import
that breaks them fails the check: a new cycle or an upward import fails CI."""
import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sensitivity.frameworks import FRAMEWORKS

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
ANALYSIS = "The analysis imports no framework, trial, sweep or forecast code"
CONFIG = "The configuration imports no framework"
TRIAL_RUNNERS = "What runs a trial imports neither Ray nor Optuna"
ROOMS = "The analysis' rooms"


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
    ("analysis/report/page.py", "def added():\n    from sensitivity.trial import attacks\n", ANALYSIS),
    ("analysis/report/papers.py", "from sensitivity.forecast import launch\n", ANALYSIS),
    ("studies/records.py", "def added():\n    from sensitivity.config import spaces\n", ANALYSIS),  # read by analysis
    ("config/spaces.py", "def added():\n    import torch\n", CONFIG),
    ("config/defaults.py", "def added():\n    from mxnet import gluon\n", CONFIG),  # legacy-only: not installed
    ("core/paths.py", "def added():\n    import optuna\n", TRIAL_RUNNERS),
    ("frameworks/torch_adapter.py", "def added():\n    import ray.tune\n", TRIAL_RUNNERS),
    ("trial/worker.py", "def added():\n    from optuna.trial import TrialState\n", TRIAL_RUNNERS),
    ("datasets/registry.py", "def added():\n    import ray\n", TRIAL_RUNNERS),
    ("analysis/figures/frontier.py", "from sensitivity.analysis.claims import registry\n", ROOMS),  # figure -> claim
    ("analysis/claims/findings.py", "def added():\n    from sensitivity.analysis.figures import style\n", ROOMS),
    ("analysis/claims/base.py", "from sensitivity.analysis.report import html\n", ROOMS),  # claim -> report
    ("analysis/tables/seeds.py", "def added():\n    from sensitivity.analysis.rankings import base\n", ROOMS),
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


def test_every_framework_is_under_the_configurations_contract():
    """A new framework's package joins the contract that keeps it out of the configuration."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    forbidden = {c["name"]: c for c in contracts}[CONFIG]["forbidden_modules"]
    assert {info.module for info in FRAMEWORKS.values()} <= set(forbidden)


def imports_inside_functions(tree: ast.Module) -> list:
    """(import statement, the statement list holding it, its index) for every import inside a function."""
    found = []

    def visit(body: list, inside: bool) -> None:
        for i, statement in enumerate(body):
            if inside and isinstance(statement, (ast.Import, ast.ImportFrom)):
                found.append((statement, body, i))
            nested = inside or isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            for block in (getattr(statement, name, None) for name in ("body", "orelse", "finalbody")):
                if isinstance(block, list):
                    visit(block, nested)
            for handler in getattr(statement, "handlers", ()):
                visit(handler.body, nested)
    visit(tree.body, False)
    return found


def says_lazy(lines: list, statement, body: list, i: int) -> bool:
    """A `# lazy: why` comment on the import's lines, or above the run of imports it belongs to."""
    first = i
    while first > 0 and isinstance(body[first - 1], (ast.Import, ast.ImportFrom)) \
            and body[first - 1].end_lineno >= body[first].lineno - 1:
        first -= 1
    spans = [range(s.lineno, s.end_lineno + 1) for s in body[first:i + 1]] + [[body[first].lineno - 1]]
    return any("# lazy: " in lines[k - 1] for span in spans for k in span if k >= 1)


def test_imports_inside_functions_keep_a_heavy_import_lazy_and_say_so():
    """An import inside a function is allowed only to keep a heavy one lazy (a framework, Ray, plotly,
    Optuna, pandas...; or an order the worker needs), and a `# lazy:` comment says what; the standard library's
    modules go at the top. An import placed in a function to hide a cycle fails here, and the cycle fails the
    contracts above once the import moves up."""
    unexplained, standard = [], []
    for path in sorted((REPO / "sensitivity").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for statement, body, i in imports_inside_functions(ast.parse(text)):
            where = f"{path.relative_to(REPO)}:{statement.lineno}: {ast.unparse(statement)}"
            names = [a.name for a in statement.names] if isinstance(statement, ast.Import) else [statement.module or ""]
            if any(name.split(".")[0] in sys.stdlib_module_names for name in names):
                standard.append(where)
            elif not says_lazy(lines, statement, body, i):
                unexplained.append(where)
    assert not standard, "standard-library imports inside functions (put them at the top):\n" + "\n".join(standard)
    assert not unexplained, "imports inside functions without a `# lazy:` comment:\n" + "\n".join(unexplained)


def test_an_import_inside_a_function_without_its_reason_is_found():
    source = "def f():\n    # lazy: plotly\n    import plotly\n\n\ndef g():\n    import optuna\n    import json\n"
    lines = source.splitlines()
    found = [(s.lineno, says_lazy(lines, s, body, i)) for s, body, i in imports_inside_functions(ast.parse(source))]
    assert found == [(3, True), (7, False), (8, False)]
