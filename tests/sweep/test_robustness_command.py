"""Robustness end to end: a real defaults study keeps its weights, real workers attack the models in their
own frameworks (one of the legacy environment when it is here), the records land in the study, the figure
and the report draw them."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

from sensitivity import frameworks
from sensitivity.analysis.robustness import PREFIX

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
SECOND = next((n for n in ("mxnet", "tensorflow") if frameworks.probe(n)[1]), None)
EPS = "0,0.1,0.3"


def cli(cwd, *args, timeout=900):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Each framework's defaults on digits, two seeds, one epoch, weights kept; then its own defaults attacked."""
    if SECOND is None:
        pytest.skip("needs a second framework")
    cwd = tmp_path_factory.mktemp("robustness")
    proc = cli(cwd, "defaults", "--frameworks", f"torch,{SECOND}", "--datasets", "digits", "--seeds", 2,
               "--budget-epochs", 1, "--keep-weights", "--parallel", 2, "--study", "d", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    attack = cli(cwd, "robustness", "d", "--defaults-only", "--samples", 120, "--eps", EPS)
    assert attack.returncode == 0, attack.stderr[-3000:]
    study = optuna.load_study(study_name="d", storage=f"sqlite:///{cwd}/results/optuna.db")
    return cwd, study, attack.stdout


def test_own_defaults_of_both_frameworks_are_attacked_white_box_and_by_transfer(attacked):
    _, study, stdout = attacked
    models = [t for t in study.trials if t.user_attrs.get("own_default")]
    records = {int(k[len(PREFIX):]): v for k, v in study.user_attrs.items() if k.startswith(PREFIX)}
    assert sorted(records) == sorted(t.number for t in models) and len(records) == 4  # 2 frameworks x 2 seeds
    for trial in models:
        record = records[trial.number]
        assert record["samples"] == 120 and record["eps"] == [0.0, 0.1, 0.3]
        for attack in ("fgsm", "pgd"):
            accuracies = record["white_box"][attack]
            assert accuracies[0] == pytest.approx(record["clean"])  # eps 0 leaves the inputs alone
            assert accuracies[2] < record["clean"] - 0.2  # eps 0.3 on [0, 1] pixels breaks these models
        assert sorted(map(int, record["transfer"])) == sorted(t.number for t in models if t.number != trial.number)
        for source in record["transfer"].values():
            assert source["fgsm"][0] == pytest.approx(record["clean"])  # every model shares one test subset
    assert "white-box accuracy against eps" in stdout and SECOND in stdout


def test_weights_and_examples_are_saved_and_reload(attacked):
    cwd, study, _ = attacked
    trial = next(t for t in study.trials if t.user_attrs.get("own_default"))
    weights = np.load(trial.user_attrs["weights"])
    assert Path(trial.user_attrs["weights"]).parent == cwd / "results" / "weights" / "d"
    assert trial.user_attrs["spec"]["keep_weights"] == trial.user_attrs["weights"]
    assert sum(weights[name].size for name in weights.files) == trial.user_attrs["params"]
    examples = np.load(cwd / "results" / "robustness" / "d" / f"{trial.number}.npz")
    assert sorted(examples.files) == ["fgsm_0", "fgsm_1", "fgsm_2", "pgd_0", "pgd_1", "pgd_2"]
    assert examples["pgd_2"].shape == (120, 1, 8, 8)


def test_figure_and_report_draw_the_records(attacked):
    cwd, _, _ = attacked
    proc = cli(cwd, "plot", "d", "--kind", "robustness", "--out", "r.html")
    assert proc.returncode == 0, proc.stderr
    page = (cwd / "r.html").read_text()
    assert "torch (n=2 models)" in page and f"{SECOND} (n=2 models)" in page
    report = cli(cwd, "report", "d", "--out", "report.html")
    assert report.returncode == 0, report.stderr
    text = (cwd / "report.html").read_text()
    assert 'data-kind="robustness"' in text and 'data-kind="transfer"' in text


def test_a_study_without_kept_weights_is_a_one_line_usage_error(tmp_path, attacked):
    cwd, _, _ = attacked
    proc = cli(cwd, "robustness", "d", "--attack", "cw")
    assert proc.returncode == 2 and proc.stderr.strip() == "sensitivity robustness: --attack cw: allowed fgsm, pgd"
    proc = cli(cwd, "robustness", "nope")
    assert proc.returncode == 2 and "no study 'nope'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    other = optuna.create_study(study_name="plain", storage=f"sqlite:///{cwd}/results/optuna.db")
    other.add_trial(optuna.trial.create_trial(value=0.5, user_attrs={"status": "ok"}))
    proc = cli(cwd, "robustness", "plain")
    assert proc.returncode == 2 and "--keep-weights" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_model_that_cannot_be_attacked_is_reported_and_the_others_are_recorded(attacked):
    """Runs last: it spoils one model's weights file."""
    cwd, study, _ = attacked
    broken = next(t for t in study.trials if t.user_attrs.get("own_default"))
    Path(broken.user_attrs["weights"]).write_bytes(b"not an npz")
    proc = cli(cwd, "robustness", "d", "--defaults-only", "--samples", 50, "--attack", "fgsm", "--eps", "0,0.1")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"trial {broken.number}: not attacked:" in proc.stdout
    study = optuna.load_study(study_name="d", storage=f"sqlite:///{cwd}/results/optuna.db")
    records = {int(k[len(PREFIX):]): v for k, v in study.user_attrs.items() if k.startswith(PREFIX) and v}
    assert sorted(records) == sorted(t.number for t in study.trials
                                     if t.user_attrs.get("own_default") and t.number != broken.number)
    assert all(r["samples"] == 50 and str(broken.number) not in r["transfer"] for r in records.values())
