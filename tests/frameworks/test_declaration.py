"""One declaration per framework (frameworks.FrameworkInfo): a missing piece fails in one line at import, the files
the import cannot see agree with every declaration, and docs/architecture.md's checklist "Adding a framework" adds a
toy framework (tests/toy_framework.py), step by step, whose trial then runs for real through the runner."""
import dataclasses
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import toy_framework
from sensitivity import frameworks
from sensitivity.core import semantics, semantics_table
from sensitivity.core.spec import TrialSpec
from sensitivity.frameworks import gpu
from sensitivity.frameworks.base import Adapter
from sensitivity.trial.runner import TEST_WORKER, run_trial

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = [name for name in dir(Adapter) if not name.startswith("_")]
ADAPTER_CONTRACTS = ("Framework adapters do not import one another", "What the adapters share imports no adapter")
CONFIG_CONTRACT = "The configuration imports no framework"
TABLE = re.compile(r"(<!-- begin: sensitivity semantics --markdown -->\n)(.*)(<!-- end -->)", re.S)


def repository_gaps(info, root: Path) -> list:
    """What the files of checklist steps 5 to 7 lack for the framework `info` declares, one line each."""
    pyproject = (root / "pyproject.toml").read_text()
    contracts = {c["name"]: c for c in tomllib.loads(pyproject)["tool"]["importlinter"]["contracts"]}
    extras = pyproject.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    adapter_module, env = info.adapter.split(":")[0], info.env
    requirements = (root / f"constraints/{env}-requirements.txt").read_text().split()
    pins = (root / f"constraints/{env}.txt").read_text()
    dists = info.distribution.split("|")
    gaps = []
    if not re.search(rf"^{info.extra} = \[.*#.*\b{re.escape(adapter_module)}\b", extras, re.M):
        gaps.append(f"no extra {info.extra!r} commented with {adapter_module} in pyproject.toml")
    if not any(d in requirements and re.search(rf"^{re.escape(d)}==", pins, re.M) for d in dists):
        gaps.append(f"{info.distribution} not installed and pinned by constraints/{env}-requirements.txt, {env}.txt")
    for name in ADAPTER_CONTRACTS:
        if adapter_module not in contracts[name].get("modules", contracts[name].get("forbidden_modules")):
            gaps.append(f"{adapter_module} not in the contract {name!r}")
    if info.module not in contracts[CONFIG_CONTRACT]["forbidden_modules"]:
        gaps.append(f"{info.module} not in the contract {CONFIG_CONTRACT!r}")
    if f"\n| {info.name} | " not in TABLE.search((root / "docs/semantics.md").read_text()).group(2):
        gaps.append(f"no rows of {info.name} in docs/semantics.md's table")
    return gaps


def test_every_declaration_holds_its_pieces():
    for name, info in frameworks.FRAMEWORKS.items():
        frameworks.check_declaration(info)
        assert info.native is semantics.NATIVE[name] and info.gpu == gpu.support(name)


def test_every_framework_is_in_the_files_the_import_cannot_check():
    assert {name: repository_gaps(info, REPO) for name, info in frameworks.FRAMEWORKS.items()} == \
        {name: [] for name in frameworks.FRAMEWORKS}


def test_gpu_build_has_a_branch_for_each_framework_it_reads():
    for name in gpu.READS_BUILD:
        assert gpu.build(name)[1] != "no GPU route known", name
    assert gpu.build("no-such-framework") == (False, "no GPU route known")


NEW = dataclasses.replace(frameworks.FRAMEWORKS["keras"], name="newfw")


@pytest.mark.parametrize("change, message", [
    ({"adapter": "newfw_adapter"}, "adapter 'newfw_adapter' is not 'module:Class'"),
    ({"env": "conda"}, "env 'conda' is not one of modern, legacy (core/envs.py)"),
    ({"distribution": ""}, "no distribution"),
    ({"extra": ""}, "no extra (its pip extra in pyproject.toml [project.optional-dependencies])"),
    ({"module": ""}, "no module"),
    ({"backend_variable": ""}, "backends without a backend_variable"),
    ({"native": None}, "no native semantics (a Native in core/semantics.py NATIVE, or native= in its declaration)"),
    ({"name": "torch"}, "its native semantics differ from core/semantics.py NATIVE's entry"),
    ({"gpu": None}, "no GPU support (frameworks/gpu.py: a branch of build() or a reason in NO_GPU_ROUTE"),
])
def test_a_missing_piece_fails_in_one_line(change, message):
    with pytest.raises(frameworks.DeclarationError) as caught:
        frameworks.check_declaration(dataclasses.replace(NEW, **change))
    assert str(caught.value).startswith(f"framework '{change.get('name', 'newfw')}': {message}")
    assert "\n" not in str(caught.value)


def test_a_missing_piece_stops_the_import_in_one_line(tmp_path):
    """A declaration line added without its native semantics and GPU support: importing the registry fails."""
    shutil.copytree(REPO / "sensitivity", tmp_path / "sensitivity", ignore=shutil.ignore_patterns("__pycache__"))
    registry = tmp_path / "sensitivity/frameworks/__init__.py"
    text = registry.read_text()
    assert text.count("FRAMEWORKS = {\n") == 1
    registry.write_text(text.replace("FRAMEWORKS = {\n", 'FRAMEWORKS = {\n    "newfw": _entry("newfw", "NewfwAdapter", '
                                     '"modern", "newfw", "newfw"),\n'))
    proc = subprocess.run([sys.executable, "-c", "import sensitivity.frameworks"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        "sensitivity.frameworks.DeclarationError: framework 'newfw': no native semantics (a Native in "
        "core/semantics.py NATIVE, or native= in its declaration)"), proc.stderr


# The toy framework, added by the checklist's steps.

@pytest.fixture
def toy():
    frameworks.register(toy_framework.DECLARATION)
    yield toy_framework.DECLARATION
    for table in (frameworks.FRAMEWORKS, semantics.NATIVE, gpu.DETERMINISM, gpu.NO_GPU_ROUTE):
        table.pop(toy_framework.NAME, None)


def step_adapter(toy, tmp_path):
    adapter = frameworks.load_adapter("toy")
    assert adapter.name == "toy" and not [member for member in PROTOCOL if not hasattr(adapter, member)]
    assert frameworks.importable("toy")


def step_native_semantics(toy, tmp_path):
    assert semantics.NATIVE["toy"] is toy_framework.NATIVE
    resolved = semantics.resolve(TrialSpec(framework="toy", dataset="digits", optimizer="adam"))
    # no scheduler: its native rates are the loop's (canonical); no optimizer classes: the hand-written update
    assert resolved.knobs == {**dict.fromkeys(semantics.KNOBS, "toy"), "schedule": "canonical"}
    assert not resolved.stock


def step_gpu_support(toy, tmp_path):
    assert gpu.build("toy") == (False, toy_framework.GPU.no_gpu)
    assert gpu.DETERMINISM["toy"] == toy_framework.GPU.determinism


def step_declaration(toy, tmp_path):
    assert frameworks.FRAMEWORKS["toy"] is toy and frameworks.worker_variables(
        TrialSpec(framework="toy", dataset="digits")) == {}
    with pytest.raises(frameworks.DeclarationError, match="^framework 'toy': already declared$"):
        frameworks.register(toy)


def repository_copy(tmp_path: Path) -> Path:
    for path in ("pyproject.toml", "constraints", "docs/semantics.md"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (REPO / path).is_dir() else shutil.copy)(REPO / path, tmp_path / path)
    return tmp_path


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    text = path.read_text()
    assert text.count(old) == count, (path, old)
    path.write_text(text.replace(old, new))


def step_extra_and_environment(toy, tmp_path):
    root = repository_copy(tmp_path)
    assert "no extra 'toy' commented with toy_framework in pyproject.toml" in repository_gaps(toy, root)
    edit(root / "pyproject.toml", "[project.optional-dependencies]\n",
         '[project.optional-dependencies]\ntoy = ["numpy"]  # toy_framework\n')
    (root / "constraints/modern-requirements.txt").write_text(
        (root / "constraints/modern-requirements.txt").read_text() + "numpy\n")
    assert not [gap for gap in repository_gaps(toy, root) if "extra" in gap or "constraints" in gap]


def step_import_contracts(toy, tmp_path):
    root = repository_copy(tmp_path)
    assert sum("not in the contract" in gap for gap in repository_gaps(toy, root)) == 3
    edit(root / "pyproject.toml", '"sensitivity.frameworks.theano_adapter",\n]',
         '"sensitivity.frameworks.theano_adapter", "toy_framework",\n]', count=2)
    edit(root / "pyproject.toml", '"pytensor"]', '"pytensor", "toy_framework"]')
    assert not [gap for gap in repository_gaps(toy, root) if "contract" in gap]


def step_docs(toy, tmp_path):
    root = repository_copy(tmp_path)
    doc = root / "docs/semantics.md"
    assert "no rows of toy in docs/semantics.md's table" in repository_gaps(toy, root)
    doc.write_text(TABLE.sub(lambda m: m[1] + semantics_table.markdown() + m[3], doc.read_text()))
    assert not [gap for gap in repository_gaps(toy, root) if "docs" in gap]


STEPS = {"Adapter": step_adapter, "Native semantics": step_native_semantics, "GPU support": step_gpu_support,
         "Declaration": step_declaration, "Extra and environment": step_extra_and_environment,
         "Import contracts": step_import_contracts, "Docs": step_docs}
# What each step's text must name: the files and places the step above touches or reads.
NAMED = {"Adapter": ("sensitivity/frameworks/NAME_adapter.py", "frameworks/base.py"),
         "Native semantics": ("sensitivity/core/semantics.py", 'NATIVE["NAME"]'),
         "GPU support": ("sensitivity/frameworks/gpu.py", "build()", "READS_BUILD", "NO_GPU_ROUTE", "DETERMINISM"),
         "Declaration": ("FRAMEWORKS", "register", "native=", "gpu="),
         "Extra and environment": ("pyproject.toml", "[project.optional-dependencies]",
                                   "constraints/ENV-requirements.txt", "constraints/ENV.txt"),
         "Import contracts": ADAPTER_CONTRACTS + (CONFIG_CONTRACT,),
         "Docs": ("sensitivity semantics --markdown", "docs/semantics.md")}


def checklist() -> dict:
    """docs/architecture.md's "Adding a framework" steps: label -> text, in order."""
    section = (REPO / "docs/architecture.md").read_text().split("\n## Adding a framework\n", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^\d+\. \*\*(.+?)\*\*: (.*?)(?=^\d+\. |^\n)", section, re.M | re.S)
    return {label: " ".join(text.split()) for label, text in items}


def test_the_checklist_names_what_each_step_touches():
    steps = checklist()
    assert list(steps) == list(STEPS), "docs/architecture.md's checklist and this test's steps differ"
    for label, text in steps.items():
        assert [name for name in NAMED[label] if name not in text] == [], label


@pytest.mark.parametrize("label", list(STEPS))
def test_the_toy_framework_is_added_by_each_step(toy, tmp_path, label):
    STEPS[label](toy, tmp_path)


def test_a_trial_of_the_toy_framework_runs_through_the_runner(toy, monkeypatch):
    """Its worker (tests/toy_framework.py run as a file) registers the same declaration, then serves."""
    monkeypatch.setenv(TEST_WORKER, "toy_framework")
    result = run_trial(TrialSpec(framework="toy", dataset="digits", epochs=2, batch_size=32, lr=0.05,
                                 optimizer="momentum", momentum=0.9, threads=1))
    assert result.status == "ok", result.reason + (result.stderr_tail or "")
    assert result.steps == 2 * (1437 // 32) and result.accuracy > 0.8
    assert result.env["framework_version"].startswith("toy (numpy ") and result.params == 167_178
