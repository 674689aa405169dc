"""`sensitivity tunability`: the grid around each framework's own default, chosen on validation with its own
seeds, then the chosen configurations and the default on fresh seeds; bad input refused in one line before
anything is written; a rerun resumes and runs nothing again."""
import json

import optuna
import pytest

from sensitivity import frameworks
from sensitivity.analysis.tables.tunability import tunability_rows
from sensitivity.cli import main
from sensitivity.config.defaults import load_table
from sensitivity.sweep.plans import defaults_space
from sensitivity.sweep.tunability import SELECTION_SEED, default_fields, fresh_plan, grid, selection_plan

TORCH = next(e for e in load_table() if e.name == "torch-train-on-mnist")


def test_the_grid_holds_the_default_and_varies_one_field_per_knob():
    space = defaults_space("t", ["torch"], ["digits"], 5)
    fields, _ = default_fields(space, TORCH, "digits")
    points = grid(fields, ["lr", "optimizer"])
    assert len(points) == 15 and points[0] == {"lr": fields["lr"], "optimizer": fields["optimizer"]}
    lrs = sorted({p["lr"] for p in points})
    assert lrs == pytest.approx([fields["lr"] * 10.0 ** d for d in (-2, -1, 0, 1, 2)])
    plan = selection_plan(space, [TORCH], "digits", ["lr", "batch_size"], 2)
    assert {p.attrs["seed"] for p in plan} == {SELECTION_SEED, SELECTION_SEED + 1}
    home = next(p for p in plan if json.loads(p.attrs["grid_point"]) == json.loads(p.attrs["grid_home"]))
    for trial in plan:  # another batch size keeps the default's epochs: its steps scale inversely
        other = trial.planned
        assert other["iterations"] * other["batch_size"] == pytest.approx(
            home.planned["iterations"] * home.planned["batch_size"], rel=0.05)
        assert {k: v for k, v in other.items() if k not in ("lr", "batch_size", "iterations")} == \
            {k: v for k, v in home.planned.items() if k not in ("lr", "batch_size", "iterations")}
    fresh = fresh_plan(space, TORCH, "digits", ["lr"], [{"lr": 0.5}, {"lr": 0.5}], 3)
    assert len(fresh) == 2 * 3 and {p.attrs["seed"] for p in fresh} == {0, 1, 2}  # the default and one point


@pytest.mark.parametrize("extra, message", [
    (["--knobs", "lr,momentum"], "--knobs: 'momentum' is not a knob of the grid; allowed: lr, optimizer, batch_size"),
    (["--knobs", "lr,lr"], "--knobs lr,lr: give each knob once"),
    (["--defaults", "nosuch"], "--defaults: 'nosuch' is not in search_spaces/defaults.yaml; allowed: "),
    (["--defaults", "dlbench-shared"], "(a shared setting, nobody's own)"),
    (["--defaults", "caffe-lenet"], "(it runs on all); allowed: torch-train-on-mnist, torch-train-on-cifar10"),
    (["--defaults", "tensorflow-mnist-deep"], "is not the own default of one framework among torch (it runs on"),
    (["--dataset", "imagenet"], "--dataset: unknown 'imagenet'"),
    (["--frameworks", "torch,caffe2"], "--frameworks: unknown 'caffe2'"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, extra, message):
    url = f"sqlite:///{tmp_path / 'none.db'}"
    arguments = ["tunability", "--frameworks", "torch", *extra, "--storage", url, "--no-progress"]
    if "--frameworks" in extra:
        arguments = ["tunability", *extra, "--storage", url, "--no-progress"]
    assert main(arguments) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_both_phases_run_into_one_study_and_a_rerun_runs_nothing_again(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 't.db'}"
    command = ["tunability", "--frameworks", "torch", "--knobs", "lr", "--seeds", 3, "--budget-epochs", 1,
               "--storage", url, "--study", "tu", "--parallel", 2, "--no-progress"]
    assert main(command) == 0
    out = capsys.readouterr().out
    assert "selection: 5 runs (5 grid points a default x 1 selection seed(s), 1 default(s))" in out
    assert "torch-train-on-mnist on torch: tuned: lr=" in out
    study = optuna.load_study(study_name="tu", storage=url)
    trials = study.get_trials(deepcopy=False)
    selection = [t for t in trials if t.user_attrs["phase"] == "selection"]
    fresh = [t for t in trials if t.user_attrs["phase"] == "fresh"]
    assert len(selection) == 5 and {t.user_attrs["seed"] for t in selection} == {SELECTION_SEED}
    assert {t.user_attrs["seed"] for t in fresh} == {0, 1, 2} and len(fresh) in (3, 6)  # the default, and the
    # tuned configuration where it is another
    rows = tunability_rows(study).set_index("role")
    assert set(rows.index) == {"tuned", "lr alone"} and (rows["fresh_seeds"] == 3).all()
    assert rows.loc["tuned", "grid_points"] == 5 and rows.loc["tuned", "selection_seeds"] == 1
    assert main(command) == 0  # resumed: both phases' trials are in the study, nothing runs again
    assert len(optuna.load_study(study_name="tu", storage=url).get_trials(deepcopy=False)) == len(trials)
    assert main(["findings", "tu", "--storage", url]) == 0
    assert "[not tested] tunability: every comparison ran cut below its published epochs" in capsys.readouterr().out
