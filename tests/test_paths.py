"""Study names become file names: checked wherever they enter, so nothing is written outside results/."""
import subprocess
import sys

import pytest

from sensitivity.core import paths

pytestmark = pytest.mark.portable
HOSTILE = ["/etc/passwd", "/tmp/x", "../../x", "a/b", "..", ".hidden", "x\x00y", "x" * 5000, "", "a b", "ä"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused_in_one_line(name):
    with pytest.raises(paths.UnsafeName) as caught:
        paths.check_name(name)
    assert "allowed letters, digits" in str(caught.value) and "\n" not in str(caught.value)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("name", ["mnist5k-lenet5", "main-sweep-torch-tensorflow-mxnet", "a.b_c-1", "x" * 100])
def test_ordinary_names_pass_and_stay_under_their_root(name, tmp_path):
    assert paths.under(tmp_path, name, "-report.html").parent == tmp_path


def cli(cwd, *args):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("name", ["/tmp/x", "../../x"])
@pytest.mark.parametrize("command", [
    ["sweep", "SPACE", "--trials", "1"], ["defaults", "--frameworks", "torch", "--datasets", "digits"],
    ["transfer", "--frameworks", "torch", "--datasets", "digits"],
    ["ablate", "--from", "torch:canonical", "--to", "torch:native", "--dataset", "digits"]])
def test_a_hostile_study_name_writes_nothing_anywhere(tmp_path, name, command):
    pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("study: fine\ndataset: digits\nframeworks: [torch]\n"
                     "objectives: [{metric: val_accuracy, direction: maximize}]\n")
    work = tmp_path / "work"
    work.mkdir()
    proc = cli(work, *[str(space) if a == "SPACE" else a for a in command], "--study", name)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "allowed letters, digits" in proc.stderr
    assert list(work.iterdir()) == []  # no results/, no database
    assert not (tmp_path / "x").exists()


def test_a_space_whose_study_name_leaves_results_is_refused(tmp_path):
    pytest.importorskip("optuna")
    space = tmp_path / "space.yaml"
    space.write_text("study: ../../escape\ndataset: digits\nframeworks: [torch]\n"
                     "objectives: [{metric: val_accuracy, direction: maximize}]\n")
    proc = cli(tmp_path, "sweep", str(space), "--trials", "1")
    assert proc.returncode == 2 and "study: study name '../../escape'" in proc.stderr, proc.stderr
    assert not (tmp_path / "results").exists()
