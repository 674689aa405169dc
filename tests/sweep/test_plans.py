"""Framework defaults as planned trials: `sweep --with-defaults` and `sensitivity defaults`."""
import json
import subprocess
import sys

import optuna
import pytest

from sensitivity import frameworks
from sensitivity.config.defaults import Cut, load_table
from sensitivity.forecast.runs import STEP_S, rough_seconds, run_of
from sensitivity.sweep.plans import default_plan, defaults_space, enqueue_plan, longest_first

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def test_plan_holds_every_own_default_once_and_queues_idempotently():
    space = defaults_space("d", ["torch", "tensorflow"], ["digits"], seeds=2)
    plan = default_plan(space, ["torch", "tensorflow"], ["digits"], seeds=2, cut=Cut(epochs=2))
    own = {(e.name, f) for e in load_table() for f in e.own_frameworks(["torch", "tensorflow"])}
    assert {(p.attrs["default"], p.planned["framework"]) for p in plan} == own
    assert "dlbench-shared" not in {name for name, _ in own}  # a shared setting is nobody's own default
    assert len(plan) == 2 * len(own) and len({p.key for p in plan}) == len(plan)
    lenet = next(p for p in plan if p.attrs["default"] == "caffe-lenet")
    assert lenet.planned["iterations"] == 2 * 17 and lenet.planned["model"] == "mlp"  # 17 steps of 64 an epoch
    assert lenet.attrs["budget_scale"] == round(2 / (10000 * 64 / 60000), 6) and lenet.attrs["run_epochs"] == 2
    assert 0 < lenet.attrs["samples_scale"] < 0.01  # 2 epochs of digits against 10.7 of MNIST: said in the results
    full = default_plan(space, ["torch"], ["digits"], seeds=1)
    assert {p.attrs["budget_scale"] for p in full} == {1.0}
    study = optuna.create_study()
    assert enqueue_plan(study, plan) == len(plan)
    for trial in study.get_trials():  # as if they had run: the plan keys are in the study now
        study._storage.set_trial_user_attr(trial._trial_id, "plan_key", trial.user_attrs["plan_key"])
    assert enqueue_plan(study, plan) == 0


def test_a_plan_is_ordered_longest_first_and_equal_lengths_keep_their_order():
    space = defaults_space("d", ["torch", "tensorflow"], ["digits"], seeds=3)
    plan = default_plan(space, ["torch", "tensorflow"], ["digits"], seeds=3,
                        names=["tensorflow-mnist-deep", "torch-train-on-mnist"])  # TensorFlow's is planned first
    ordered = longest_first(plan, space)
    lengths = [rough_seconds(run_of(p.planned, space.val_fraction, "cpu", 1)) for p in ordered]
    assert sorted(map(id, ordered)) == sorted(map(id, plan)) and lengths == sorted(lengths, reverse=True)
    assert lengths[0] > 2 * lengths[-1]  # not all alike: the order means something here
    first = ordered[0]  # Torch's own MNIST default: batch 10, the most steps
    assert first.attrs["default"] == "torch-train-on-mnist" and first.planned["batch_size"] == 10
    assert [p.attrs["seed"] for p in ordered[:3]] == [0, 1, 2]  # a default's seeds, equal in length, stay in order
    steps = {**first.planned, "iterations": 2 * first.planned["iterations"]}
    assert rough_seconds(run_of(steps, 0.2, "cpu", 1)) > rough_seconds(run_of(first.planned, 0.2, "cpu", 1))
    own_layers = {**first.planned, "model": "caffe:net"}  # a model the registry does not hold: its steps alone
    assert rough_seconds(run_of(own_layers, 0.2, "cpu", 1)) == first.planned["iterations"] * STEP_S


def run(cwd, *args):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args), "--no-progress"], cwd=cwd,
                          capture_output=True, text=True, timeout=900)


def test_sweep_with_defaults_runs_them_first_and_marks_them(tmp_path):
    (tmp_path / "s.yaml").write_text("""
study: withdefaults
dataset: digits
frameworks: [torch]
parameters: {lr: {type: float, low: 0.001, high: 0.1, log: true}, weight_decay: {type: float, low: 0.0, high: 0.01}}
fixed: {epochs: 1}
objectives: [{metric: val_accuracy, direction: maximize}]
""")
    proc = run(tmp_path, "sweep", "s.yaml", "--trials", 10, "--with-defaults", "--seed", 0, "--seeds", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = optuna.load_study(study_name="withdefaults", storage=f"sqlite:///{tmp_path}/results/optuna.db").trials
    defaults = [t for t in trials if t.user_attrs.get("is_default")]
    names = {e.name for e in load_table() if "torch" in e.own_frameworks(["torch"])}
    assert {t.user_attrs["default"] for t in defaults} == names and len(trials) == 10
    for name in names:  # --seeds 2 replaced the space's one seed, for the defaults too
        runs = [t for t in defaults if t.user_attrs["default"] == name]
        assert sorted(t.user_attrs["seed"] for t in runs) == [0, 1] and len({t.user_attrs["config_id"] for t in runs}) == 1
    torch7 = next(t for t in defaults if t.user_attrs["default"] == "torch-train-on-mnist")
    assert torch7.user_attrs["spec"]["batch_size"] == 10  # the spec it ran, planned values included
    rerun = subprocess.run([sys.executable, "-m", "sensitivity.cli", "trial", "--from-study", "withdefaults", "--trial",
                            str(torch7.number), "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert json.loads(rerun.stdout.splitlines()[-1])["spec"]["batch_size"] == 10, rerun.stderr[-2000:]
    assert min(t.number for t in trials if not t.user_attrs.get("is_default")) > max(t.number for t in defaults)
    lenet = next(t for t in defaults if t.user_attrs["default"] == "caffe-lenet")
    assert lenet.params["lr"] == 0.01 and lenet.params["weight_decay"] == 0.0005  # its own values, in range
    quick = next(t for t in defaults if t.user_attrs["default"] == "torch-train-on-cifar10")
    assert quick.params["weight_decay"] == 0.0  # not set by the default: TrialSpec's, not a sampled one
    assert quick.user_attrs["run_epochs"] == 1 and quick.user_attrs["budget_scale"] == round(1 / 45, 6)


def test_defaults_command_runs_each_frameworks_own_defaults(tmp_path):
    proc = run(tmp_path, "defaults", "--frameworks", "torch", "--datasets", "digits", "--budget-epochs", 1,
               "--parallel", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = optuna.load_study(study_name="defaults", storage=f"sqlite:///{tmp_path}/results/optuna.db").trials
    names = sorted(e.name for e in load_table() if "torch" in e.own_frameworks(["torch"]))
    assert sorted(t.user_attrs["default"] for t in trials) == names
    assert all(t.state.name == "COMPLETE" and t.user_attrs["status"] in ("ok", "diverged") for t in trials)
    bad = run(tmp_path, "defaults", "--frameworks", "caffe2")
    assert bad.returncode == 2 and "--frameworks: unknown 'caffe2'" in bad.stderr


def test_transfer_runs_every_default_on_the_target_and_reports_the_matrix(tmp_path):
    proc = run(tmp_path, "transfer", "--frameworks", "torch", "--datasets", "digits", "--budget-epochs", 1,
               "--parallel", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    study = optuna.load_study(study_name="transfer", storage=f"sqlite:///{tmp_path}/results/optuna.db")
    lengths = [rough_seconds(run_of(t.user_attrs["planned"], 0.2, "cpu", 1)) for t in study.trials]
    assert lengths == sorted(lengths, reverse=True) and lengths[0] > lengths[-1]  # queued longest first (2 slots)
    ran = sorted(t.user_attrs["default"] for t in study.trials)
    assert ran == sorted(e.name for e in load_table() if e.published_epochs("digits"))  # DLBench gives no budget
    assert sum(t.user_attrs["own_default"] for t in study.trials) == 1  # torch's own: its demo's default
    from sensitivity.analysis.tables.transfer import transfer_matrix
    cells = transfer_matrix(study)
    assert (cells["own_default"] == "torch-train-on-mnist").all() and cells["relative_accuracy"].notna().all()
    report = subprocess.run([sys.executable, "-m", "sensitivity.cli", "report", "transfer"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0 and "Across frameworks on digits" in (
        tmp_path / "results" / "transfer-report.html").read_text()


def test_the_canonical_regime_runs_its_own_seeds_and_needs_to_be_run(tmp_path, monkeypatch, capsys):
    """`transfer --canonical-seeds 2`: the control's runs are identical on every seed, so 2 a cell show it, while
    the native regime keeps its --seeds; without the canonical regime the option is refused before any write."""
    from sensitivity.cli import main

    space = defaults_space("t", ["torch", "tensorflow"], ["digits"], seeds=6, regimes=("native", "canonical"))
    plan = default_plan(space, ["torch", "tensorflow"], ["digits"], seeds=6, transfer=True,
                        names=["torch-train-on-mnist"], canonical_seeds=2)
    seeds = {}
    for p in plan:
        seeds.setdefault((p.planned["semantics"], p.planned["framework"]), set()).add(p.attrs["seed"])
    assert seeds == {(regime, f): set(range(6 if regime == "native" else 2))
                     for regime in ("native", "canonical") for f in ("torch", "tensorflow")}
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    code = main(["transfer", "--frameworks", "torch", "--datasets", "digits", "--canonical-seeds", "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "--canonical-seeds 2: needs --semantics both or canonical" in err
    assert list(tmp_path.iterdir()) == []


def test_a_designs_points_are_ordered_by_their_own_configuration():
    """A design point has no `planned` fields (it samples the space): its length is its parameters' over the
    space's fixed fields, so its smallest batches, the most steps of the same epochs, come first."""
    from pathlib import Path

    from sensitivity.config.design import Design, params_of_space
    from sensitivity.config.spaces import load_space
    from sensitivity.sweep.design import design_plan

    space = load_space(Path(__file__).resolve().parents[2] / "search_spaces" / "digits-relative.yaml")
    plan = design_plan(space, Design("sobol", 4, 0, tuple(params_of_space(space)), seeds=2))
    ordered = longest_first(plan, space)
    batches = [p.params["batch_size"] for p in ordered]
    assert batches == sorted(batches) and len(set(batches)) > 1 and len(ordered) == len(plan)
    assert all(p.planned is None for p in ordered)
