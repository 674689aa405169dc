"""The analysis gives the same Findings and figure data as before its move into rooms (issue 40), and as the code
that made the golden copy: the Findings (text, with every comparison and the details, and --json) and the data of
every figure (`export --figure KIND --format json`), computed from one stored main-job database
(`golden/main-job.db.xz`, made by `scripts/main_job.sh` at 7eaf482, with the tunability study its step 2 now runs
added by `sensitivity tunability` at 78916e1) and compared with `golden/`, which that code wrote. The commands run in-process, as a user types them; the trial cache lives in the test's own folder.

The Findings' text is compared byte for byte. The figures' JSON is compared after rounding every float to 10
significant digits: a CPU whose kernels sum in another order moves the 16th digit, not a verdict.

To write the golden copy again (a change of behaviour, in a commit of its own that lists what changed and why):
SENSITIVITY_WRITE_GOLDEN=1 .venv/bin/python -m pytest tests/analysis/test_golden.py
"""
import json
import re
import lzma
import os
import shutil

import pytest

from sensitivity.cli import main

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
TAG = "torch-tensorflow-mxnet"
SWEEP = f"main-sweep-{TAG}"
WITH = [f"main-transfer-{TAG}", f"main-transfer-steps-{TAG}", f"main-crossover-{TAG}", f"main-placebo-{TAG}",
        f"{SWEEP}-alone", f"main-design-{TAG}", f"main-ablation-{TAG}", f"main-tunability-{TAG}"]
STUDY_KINDS = ("findings", "frontier", "importance", "isolation", "slice", "contour", "curves", "seeds", "resources",
               "divergence")
FIGURES = [(SWEEP, kind) for kind in STUDY_KINDS] + [
    (f"main-transfer-{TAG}", "transfer"), (f"main-transfer-{TAG}", "robustness"), (f"main-ablation-{TAG}", "ablation"),
    (f"main-tunability-{TAG}", "tunability")]
WRITE = os.environ.get("SENSITIVITY_WRITE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    folder = tmp_path_factory.mktemp("golden")
    with lzma.open(os.path.join(GOLDEN, "main-job.db.xz")) as packed, open(folder / "main.db", "wb") as out:
        shutil.copyfileobj(packed, out)
    patch = pytest.MonkeyPatch()
    patch.setenv("SENSITIVITY_CACHE_DIR", str(folder / "cache"))
    yield f"sqlite:///{folder / 'main.db'}"
    patch.undo()


def _run(capsys, *argv) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _rounded(value):
    if isinstance(value, float):
        return float(f"{value:.10g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _check(name: str, text: str) -> None:
    path = os.path.join(GOLDEN, name)
    if WRITE:
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return
    with open(path, encoding="utf-8") as golden:
        expected = golden.read()
    if name.endswith(".json"):
        assert _rounded(json.loads(text)) == _rounded(json.loads(expected)), f"{name} differs from the golden copy"
    else:
        assert text == expected, f"{name} differs from the golden copy"


def test_the_findings_text_is_the_golden_one(storage, capsys):
    others = [arg for name in WITH for arg in ("--with-study", name)]
    _check("findings.txt", _run(capsys, "findings", SWEEP, *others, "--all", "--verbose", "--storage", storage))


def test_the_findings_json_is_the_golden_one(storage, capsys):
    others = [arg for name in WITH for arg in ("--with-study", name)]
    _check("findings.json", _run(capsys, "findings", SWEEP, *others, "--json", "--storage", storage))


@pytest.mark.parametrize("study, kind", FIGURES, ids=[kind for _, kind in FIGURES])
def test_every_figures_data_is_the_golden_one(storage, capsys, tmp_path, study, kind):
    out = tmp_path / f"{kind}.json"
    _run(capsys, "export", study, "--figure", kind, "--format", "json", "--out", str(out), "--storage", storage)
    _check(f"figure-{kind}.json", out.read_text(encoding="utf-8"))


def test_the_report_of_the_main_job_draws_every_figure_of_the_table(storage, tmp_path):
    import optuna

    from sensitivity.analysis.figure_table import FIGURES
    from sensitivity.analysis.report.page import write_report

    def load(name):
        return optuna.load_study(study_name=name, storage=storage)

    page = write_report(load(SWEEP), tmp_path / "report.html", others=[load(name) for name in WITH]).read_text()
    drawn = set(re.findall(r'<div class="figure" data-kind="([a-z-]+?)(?:-\d+)?">', page))
    assert drawn == set(FIGURES), f"not drawn: {set(FIGURES) - drawn}; drawn beyond the table: {drawn - set(FIGURES)}"
