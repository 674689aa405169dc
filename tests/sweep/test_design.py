"""`sensitivity sweep --design`: the design's sizes within a budget, its mapping (log scales, categoricals),
its record in the study, growth in rounds, refusals before anything is written, and a real designed sweep
(torch on digits) killed with SIGKILL and resumed: the study then holds exactly the design's points, once."""
import json
import math
import signal
import subprocess
import sys
import time

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks
from sensitivity.analysis.table import planned_of, trials_table
from sensitivity.config.design import Design, Param, configurations_of, design_within, params_of_space
from sensitivity.config.spaces import load_space
from sensitivity.studies.storage import StorageError, open_storage
from sensitivity.sweep.design import admit_design, design_plan

SPACE = """
study: d
dataset: digits
model: mlp
frameworks: {frameworks}
parameters:
  lr: {{type: float, low: 0.001, high: 1.0, log: true}}
  optimizer: {{type: categorical, choices: [sgd, adam]}}
  {extra}
fixed: {{epochs: {epochs}}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
seeds: 3
"""
PARAMS = (Param("lr", "float", 0.001, 1.0, log=True), Param("batch_size", "int", 8, 64, log=True),
          Param("optimizer", "categorical", choices=("sgd", "momentum", "adam")))


def write(tmp_path, frameworks="[torch]", extra="", epochs=1):
    path = tmp_path / "d.yaml"
    path.write_text(SPACE.format(frameworks=frameworks, extra=extra, epochs=epochs))
    return path


def test_the_largest_complete_design_within_the_budget():
    sobol = design_within("sobol", PARAMS, 100)  # D=3: N(2D+2) = 8N <= 100 -> N=8 (a power of two), 64 points
    assert (sobol.size, sobol.points) == (8, 64)
    assert design_within("sobol", PARAMS, 100, seeds=2).size == 4  # 50 points per seed
    assert design_within("sobol", PARAMS, 8).size == 1
    morris = design_within("morris", PARAMS, 30)  # r(D+1) = 4r <= 30 -> r=7
    assert (morris.size, morris.points, len(morris.rows())) == (7, 28, 28)
    with pytest.raises(ValueError, match="cannot hold one base sample"):
        design_within("sobol", PARAMS, 7)
    with pytest.raises(ValueError, match="2 trajectories"):
        design_within("morris", PARAMS, 7)
    with pytest.raises(ValueError, match="even number of levels"):
        design_within("morris", PARAMS, 40, levels=3)
    with pytest.raises(ValueError, match="unknown design"):
        design_within("fast", PARAMS, 40)


def test_the_mapping_respects_log_scales_and_maps_categoricals_onto_their_levels():
    design = design_within("sobol", PARAMS, 1024)
    configurations = configurations_of(design.params, design.rows())
    lr = np.array([c["lr"] for c in configurations])
    assert lr.min() >= 0.001 and lr.max() <= 1.0
    assert abs(np.median(np.log10(lr)) + 1.5) < 0.15  # log-uniform: median near 10^-1.5, not near 0.5
    batch = np.array([c["batch_size"] for c in configurations])
    assert batch.dtype.kind == "i" and batch.min() >= 8 and batch.max() <= 64
    assert abs(np.median(np.log(batch)) - math.log(8 * 65) / 2) < 0.2
    counts = {o: sum(c["optimizer"] == o for c in configurations) for o in ("sgd", "momentum", "adam")}
    assert min(counts.values()) > 0.28 * len(configurations)  # each choice a third of the points


def test_the_design_is_recorded_exactly_and_grows_in_rounds():
    design = design_within("sobol", PARAMS, 64, seed=5)
    again = Design.from_attrs(design.attrs())
    assert again == design and np.array_equal(again.rows(), design.rows())
    larger = design_within("sobol", PARAMS, 128, seed=5)
    assert np.array_equal(larger.rows()[:design.points], design.rows())  # the first round's points come first


def test_each_framework_gets_its_own_copy_of_the_design_with_unique_keys(tmp_path):
    space = load_space(write(tmp_path, "[torch, tensorflow]", "batch_size: {type: categorical, choices: [32]}"),
                       seeds=2)
    params = params_of_space(space)
    assert [p.name for p in params] == ["lr", "optimizer"]  # a categorical of one choice is constant
    design = design_within("morris", params, 12, seeds=2)  # 6 points x 2 seeds
    plan = design_plan(space, design)
    assert len(plan) == 2 * design.points * 2 and len({t.key for t in plan}) == len(plan)
    assert {t.params["framework"] for t in plan} == {"torch", "tensorflow"}
    assert all(t.params["batch_size"] == 32 and t.planned is None for t in plan)
    distributions = space.distributions()
    assert all(distributions[k]._contains(distributions[k].to_internal_repr(v))
               for t in plan for k, v in t.params.items())


def test_a_study_with_another_design_is_refused_and_a_larger_one_grows_it(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/s.db"
    small = design_within("sobol", PARAMS, 16)
    assert admit_design(url, "x", small) is False  # no study yet
    study = optuna.create_study(study_name="x", storage=url)
    study.set_user_attr("design", small.attrs())
    assert admit_design(url, "x", small) is False
    with pytest.raises(ValueError, match="holds another design"):
        admit_design(url, "x", design_within("morris", PARAMS, 16))
    with pytest.raises(ValueError, match="holds another design"):
        admit_design(url, "x", design_within("sobol", PARAMS, 64, seed=1))
    assert admit_design(url, "x", design_within("sobol", PARAMS, 64)) is True
    assert study.user_attrs["design"]["size"] == 8
    plain = optuna.create_study(study_name="plain", storage=url)
    plain.add_trial(optuna.trial.create_trial(params={}, distributions={}, value=1.0))
    # known from one row: Optuna's get_trials built every trial first (10 s for a study of 10,000)
    monkeypatch.setattr(optuna.study.Study, "get_trials", lambda *args, **kw: pytest.fail("read every trial"))
    with pytest.raises(ValueError, match="without a design"):
        admit_design(url, "plain", small)


@pytest.mark.parametrize("args, says", [
    (["--design", "sobol", "--sampler", "tpe", "--trials", "20"], "cannot be combined with --sampler"),
    (["--design", "sobol", "--with-defaults", "--trials", "20"], "cannot be combined with --with-defaults"),
    (["--design", "sobol", "--trials", "5"], "cannot hold one base sample"),
    (["--design", "morris", "--trials", "5"], "2 trajectories"),
    (["--design", "morris", "--levels", "3", "--trials", "50"], "even number of levels"),
    (["--design", "fast", "--trials", "50"], "invalid choice: 'fast'"),
    (["--design", "sobol", "--trials", "6", "--until-settled"], "--until-settled needs --max-trials N"),
    (["--design", "sobol", "--trials", "6", "--max-trials", "24"], "--max-trials is the budget of --until-settled"),
    (["--design", "sobol", "--trials", "12", "--until-settled", "--max-trials", "6"], "below --trials 12"),
    (["--trials", "6", "--until-settled", "--max-trials", "24"], "--until-settled: only with --design"),
    (["--trials", "6", "--max-trials", "24"], "--max-trials: only with --design"),
])
def test_bad_design_input_is_one_line_exit_2_and_nothing_written(tmp_path, monkeypatch, capsys, args, says):
    from sensitivity.cli import main

    space = write(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = main(["sweep", str(space), *args, "--storage", f"sqlite:///{tmp_path}/s.db"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and says in lines[0], lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.yaml"]


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_kill_9_of_a_designed_sweep_then_resume_holds_exactly_the_design(tmp_path):
    space = write(tmp_path, epochs=60)  # a trial runs for seconds: killed with one done and others running
    storage = f"sqlite:///{tmp_path}/s.db"
    args = [sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--design", "sobol", "--trials", "6",
            "--parallel", "2", "--seed", "3", "--storage", storage, "--no-progress"]
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(args, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300  # Ray's start-up on a loaded machine
    while time.monotonic() < deadline:
        time.sleep(0.3)
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        try:
            trials = optuna.load_study(study_name="d", storage=open_storage(storage)).get_trials()
        except (KeyError, StorageError):
            continue
        if any(t.state == TrialState.COMPLETE for t in trials) and any(t.state == TrialState.RUNNING for t in trials):
            break
    else:
        pytest.fail("no trial completed in 300 s: " + (tmp_path / "driver.log").read_text()[-3000:])
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "base N=1: N(2D+2) = 6 points" in proc.stdout and "one seed a point" in proc.stdout
    study = optuna.load_study(study_name="d", storage=storage)
    design = Design.from_attrs(study.user_attrs["design"])
    final = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert not [t for t in study.get_trials() if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert any(t.user_attrs.get("orphaned") for t in study.get_trials())
    rows = sorted(int(t.user_attrs["config_id"].rsplit(":", 1)[1]) for t in final)
    assert rows == list(range(design.points))  # each point once
    expected = configurations_of(design.params, design.rows())
    for t in final:
        row = int(t.user_attrs["config_id"].rsplit(":", 1)[1])
        assert {k: v for k, v in t.params.items() if k != "framework"} == expected[row]
    assert not planned_of(trials_table(study)).any()  # design points are samples of the space, not defaults
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "importance", "d", "--storage", storage, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert set(record["parameters"]) == {"lr", "optimizer"} and record["n"] == design.points
    assert record["settled"] is False and "too small" in record["per_framework"]["torch"]["why"]


def test_a_designed_dry_run_prints_the_design_its_rounds_and_a_forecast_and_writes_no_study(tmp_path, monkeypatch):
    from sensitivity.cli import main

    space = write(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--design", "sobol",
                           "--trials", "6", "--until-settled", "--max-trials", "30", "--dry-run", "--probe-steps", "5",
                           "--storage", f"sqlite:///{tmp_path}/s.db"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("design: Saltelli (Sobol' indices, second order) base N=1: N(2D+2) = 6 points over D=2")
    assert "x 1 framework(s) = 6 runs; one seed a point" in lines[0]
    assert lines[1] == ("--until-settled: rounds double the design while a framework's ranking is not settled, to at "
                        "most Saltelli (Sobol' indices, second order) base N=4: N(2D+2) = 24 points over D=2 factors "
                        "(lr, optimizer), SALib seed 0, 1 seed(s) a point (24 runs per framework within --max-trials "
                        "30)")
    assert any("nothing launched" in line for line in lines)
    assert not (tmp_path / "s.db").exists() and main  # a dry run writes no study


@pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")
def test_until_settled_adds_rounds_that_grow_the_design_within_max_trials(tmp_path):
    """Saltelli bases 1, 2 and 4 (6, 12, 24 points) all lie below the base a bootstrap needs, so no round can settle:
    the rounds run to the last within --max-trials 24 and the study holds exactly that design's points, once each."""
    space = write(tmp_path)
    storage = f"sqlite:///{tmp_path}/s.db"
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--design", "sobol",
                           "--trials", "6", "--until-settled", "--max-trials", "24", "--parallel", "2",
                           "--storage", storage, "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("round ")] == \
        ["round 1 of at most 3", "round 2", "round 2 of at most 3", "round 3", "round 3 of at most 3"]
    assert out.count("not settled (not decided: a Saltelli base of N=") == 3
    assert "the study's smaller design grows to it" in out
    assert ("not settled within --max-trials 24: the next round's design (48 runs per framework) would pass it"
            in out)
    study = optuna.load_study(study_name="d", storage=storage)
    design = Design.from_attrs(study.user_attrs["design"])
    assert design.size == 4 and design.points == 24
    final = [t for t in study.get_trials() if t.state == TrialState.COMPLETE]
    assert sorted(int(t.user_attrs["config_id"].rsplit(":", 1)[1]) for t in final) == list(range(24))
