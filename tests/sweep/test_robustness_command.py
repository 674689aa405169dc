"""Robustness end to end: a real transfer study keeps its weights and checkpoints, real workers attack the models
in their own frameworks (the legacy environment's too) by a protocol file, matched at clean accuracy; the
protocol, the records and the pruned checkpoints land where they should, and the findings and report read them."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest

from sensitivity import datasets, frameworks
from sensitivity.analysis.tables.robustness import PREFIX
from sensitivity.analysis.tables.robustness_pairs import PROTOCOL_ATTR
from sensitivity.core.correctness import unpack
from sensitivity.trial.loop import checkpoint_path

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
OTHERS = [n for n in ("tensorflow", "mxnet") if frameworks.probe(n)[1]]
PROTOCOL = ("eps: [0.1, 0.3]\nclean_margin: 0.05\nbootstrap: {resamples: 500, seed: 1}\n"
            "surrogate: {framework: torch, epochs: 3}\n")  # the default model, mlp128


def cli(cwd, *args, timeout=900, env=None):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=env)


def records_of(study) -> dict:
    return {int(k[len(PREFIX):]): v for k, v in study.user_attrs.items() if k.startswith(PREFIX) and v}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Torch's and MXNet's MNIST defaults on torch and two other frameworks, digits, 3 seeds, cut to 3 epochs,
    checkpoints kept; then every model attacked by a protocol of two radii, the weights kept after."""
    if len(OTHERS) < 2:
        pytest.skip("needs three frameworks")
    cwd = tmp_path_factory.mktemp("robustness")
    (cwd / "protocol.yaml").write_text(PROTOCOL)
    proc = cli(cwd, "transfer", "--frameworks", ",".join(["torch", *OTHERS]), "--datasets", "digits", "--defaults",
               "torch-train-on-mnist,mxnet-train-mnist", "--seeds", 3, "--budget-epochs", 3, "--keep-checkpoints",
               "--parallel", 2, "--study", "d", "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    attack = cli(cwd, "robustness", "d", "--protocol", "protocol.yaml", "--keep-checkpoints")  # later tests attack
    assert attack.returncode == 0, attack.stderr[-3000:]
    (cwd / "attack.log").write_text(attack.stderr)
    study = optuna.load_study(study_name="d", storage=f"sqlite:///{cwd}/results/optuna.db")
    return cwd, study, attack.stdout


def test_the_protocol_and_its_sets_are_recorded_before_the_records(attacked):
    cwd, study, _ = attacked
    protocol = study.user_attrs[PROTOCOL_ATTR]
    assert protocol["eps"] == [0.1, 0.3] and protocol["clean_margin"] == 0.05 and len(protocol["sha256"]) == 64
    assert protocol["file"].endswith("protocol.yaml") and protocol["samples"] is None
    kinds = sorted(s["key"] for s in protocol["sets"])
    assert kinds == ["config/native/digits/mxnet-train-mnist", "config/native/digits/torch-train-on-mnist",
                     "own/native/digits"]
    trials = {t.number: t for t in study.trials}
    for one in protocol["sets"]:
        finals = [trials[n].user_attrs["val_accuracy"] for n in one["members"]]
        assert one["target"] == min(finals)  # the lowest final validation accuracy, fixed before any attack
        for number, epoch in one["matched"].items():  # the nearer of the two around the target's first crossing
            curve = {p["epoch"]: p["val_accuracy"] for p in trials[int(number)].user_attrs["curve"]}
            crossing = min(e for e, v in curve.items() if v >= one["target"])
            around = [e for e in (crossing - 1, crossing) if e in curve]
            nearest = min(reversed(around), key=lambda e: abs(curve[e] - one["target"]))
            assert (3 if epoch is None else epoch) == nearest  # None: the trained weights, after the last epoch


def test_only_the_checkpoints_that_bracket_a_target_are_kept(attacked):
    _, study, _ = attacked
    protocol = study.user_attrs[PROTOCOL_ATTR]
    for trial in study.trials:
        kept = [e for e in (1, 2) if Path(checkpoint_path(trial.user_attrs["weights"], e)).exists()]
        needed = {e for one in protocol["sets"] if trial.number in one["members"]
                  for e in (one["matched"][str(trial.number)],) if e is not None}
        assert needed <= set(kept) and len(kept) <= 2 * len([s for s in protocol["sets"]
                                                            if trial.number in s["members"]])


def test_every_model_is_attacked_on_the_whole_test_set_and_its_checkpoint_is_the_epochs_model(attacked):
    _, study, stdout = attacked
    trials, records = {t.number: t for t in study.trials}, records_of(study)
    assert sorted(records) == sorted(trials) and len(records) == 2 * 3 * 3
    test_set = len(datasets.load("digits").y_test)
    for number, record in records.items():
        published = record["published"]
        assert published["samples"] == test_set and published["eps"] == [0.0, 0.1, 0.3]  # the whole test set
        assert published["clean"] == pytest.approx(trials[number].user_attrs["accuracy"])
        assert len(unpack(published["correct"]["clean"])) == test_set and 0 <= published["zero_gradient"] <= 1
        for attack in ("fgsm", "pgd"):
            assert published["white_box"][attack][0] == pytest.approx(published["clean"])  # eps 0: clean
            assert published["white_box"][attack][2] < published["clean"] - 0.2
        check = published["check"]  # PGD once more at the checks' radius (the protocol's default 0.3)
        assert check["attack"] == "pgd" and check["eps"] == 0.3 and check["accuracy"] < published["white_box"]["pgd"][1]
        curve = {p["epoch"]: p["test_accuracy"] for p in trials[number].user_attrs["curve"]}
        for epoch, state in record["checkpoints"].items():  # reloaded, a checkpoint scores what its epoch did
            assert state["clean"] == pytest.approx(curve[int(epoch)]) and state["epoch"] == int(epoch)
    assert "white-box accuracy against eps" in stdout


def test_every_target_of_a_seed_meets_the_one_surrogate_of_that_seed(attacked):
    """The transfer attack's one source per seed: the protocol's surrogate (a model no compared framework
    trained), trained once per seed, its examples saved; every state of the seed is tested on them alone."""
    cwd, study, stdout = attacked
    trials, records = {t.number: t for t in study.trials}, records_of(study)
    protocol = study.user_attrs[PROTOCOL_ATTR]
    assert protocol["surrogate"]["model"] == "mlp128" and protocol["surrogate"]["framework"] == "torch"
    by_seed = {}
    for number, record in records.items():
        seed = trials[number].user_attrs["spec"]["seed"]
        for state in [record["published"], *record["checkpoints"].values()]:
            assert list(state["transfer"]) == ["surrogate"] and set(state["transfer_correct"]) == {"surrogate"}
            assert state["surrogate"]["seed"] == seed and state["surrogate"]["dataset"] == "digits"
            assert state["surrogate"]["describe"].startswith("one mlp128 per seed trained on torch")
            by_seed.setdefault(seed, []).append(state["surrogate"])
            assert len(state["transfer"]["surrogate"]["pgd"]) == len(state["eps"])
    assert sorted(by_seed) == [0, 1, 2]
    for seed, made in by_seed.items():  # one surrogate per seed, the same for every target
        assert len({(m["clean"], tuple(m["white_box"]["pgd"])) for m in made}) == 1
        assert (cwd / "results" / "robustness" / "d" / f"surrogate-digits-{seed}.npz").exists()
    assert "training the surrogate for digits, seed 0" in attacked_log(cwd)


def attacked_log(cwd) -> str:
    return (cwd / "attack.log").read_text()


def test_findings_and_report_read_the_matched_comparisons(attacked):
    cwd, _, _ = attacked
    proc = cli(cwd, "findings", "d", "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    claim = next(c for c in found["claims"] if c["claim"] == "robustness" and c["semantics"] == "native")
    assert claim["verdict"] != "not tested", claim["sentence"]
    assert "at matched clean accuracy" in claim["sentence"] and "(the pre-registered grid)" in claim["sentence"]
    assert "attack checks" in claim["sentence"]
    # the claim's own (natively): each framework's own default, at matched clean accuracy; the same configuration
    # on two frameworks is beside it, its decomposition
    own = [c for c in found["comparisons"] if c["claim"] == "robustness" and c["role"] == "comparison"
           and c["semantics"] == "native"]
    assert own and all("own defaults" in c["label"] and ", matched, PGD " in c["label"] for c in own)
    beside = [c for c in found["comparisons"] if c["claim"] == "robustness" and c["role"] == "beside"]
    assert any("own defaults" not in c["label"] for c in beside)
    report = cli(cwd, "report", "d", "--out", "report.html")
    assert report.returncode == 0, report.stderr
    text = (cwd / "report.html").read_text()
    assert 'data-kind="robustness"' in text and "registered in" in text and "robust AUC" in text


def test_a_bad_protocol_is_one_line_and_writes_nothing(attacked):
    cwd, study, _ = attacked
    before = dict(study.user_attrs)
    cases = [("eps: [0.1, 1.5]\n", "eps: [0.1, 1.5]: a radius outside [0, 1]; allowed: an increasing list of radii"),
             ("eps: [0.1]\neps_by_dataset: {digits: [0, 0.2]}\n", "eps_by_dataset: digits: [0, 0.2]: a radius outside"),
             ("eps: [0.3, 0.1]\n", "eps: [0.3, 0.1]: not increasing; allowed: an increasing list"),
             ("eps: [0.1]\nsurrogate: {model: resnet}\n", "surrogate: model resnet: unknown model; allowed: lenet5"),
             ("eps: [0.1]\nsurrogate: {framework: caffe2}\n",
              "surrogate.framework: caffe2: unknown framework; allowed: torch,"),
             ("eps: [0.1]\nattacks: [cw]\n", "attacks: cw: allowed fgsm, pgd"),
             ("eps: [0.1]\nsteps: 3\n", "steps: unknown key; allowed: eps, eps_by_dataset")]
    for text, message in cases:
        (cwd / "bad.yaml").write_text(text)
        proc = cli(cwd, "robustness", "d", "--protocol", "bad.yaml")
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "bad.yaml: " in proc.stderr and message in proc.stderr, proc.stderr
    (cwd / "bad.yaml").write_text("eps: [0.1]\nsurrogate: {framework: mxnet}\n")  # its environment gone
    proc = cli(cwd, "robustness", "d", "--protocol", "bad.yaml",
               env={**os.environ, "SENSITIVITY_PYTHON_LEGACY": str(cwd / "no-python")})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "bad.yaml: surrogate.framework mxnet: not installed here" in proc.stderr and "allowed: torch" in proc.stderr
    assert dict(optuna.load_study(study_name="d", storage=f"sqlite:///{cwd}/results/optuna.db").user_attrs) == before


def test_a_study_without_kept_weights_is_a_one_line_usage_error(attacked):
    cwd, _, _ = attacked
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
    proc = cli(cwd, "robustness", "d", "--samples", 50, "--protocol", "protocol.yaml")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"trial {broken.number}: not attacked:" in proc.stdout
    study = optuna.load_study(study_name="d", storage=f"sqlite:///{cwd}/results/optuna.db")
    records = records_of(study)
    assert sorted(records) == sorted(t.number for t in study.trials if t.number != broken.number)
    assert all(r["published"]["samples"] == 50 and str(broken.number) not in r["published"]["transfer"]
               for r in records.values())
    assert np.all([len(unpack(r["published"]["correct"]["clean"])) == 50 for r in records.values()])


def test_the_shipped_protocol_is_the_pre_registered_grid():
    from sensitivity.experiments import robustness_protocol

    protocol, record = robustness_protocol.load()
    assert protocol.grid("digits") == (0.0, 0.04, 0.09, 0.13, 0.19)  # scripts/robustness_pilot.py digits
    assert protocol.grid("mnist5k") == (0.0, 0.05, 0.1, 0.14, 0.21)
    assert protocol.grid("mnist1d") == (0.0, 0.05, 0.1, 0.2, 0.3)  # no pilot: the common grid
    # the surrogate is outside the compared frameworks; the claim's family and the check's tolerance registered
    assert protocol.surrogate.model == "mlp128" and protocol.surrogate.framework == "jax"
    assert protocol.primary == (("tensorflow", "torch"),) and protocol.control_tolerance == 0.02
    assert record["file"].endswith("search_spaces/robustness.yaml") and len(record["sha256"]) == 64
