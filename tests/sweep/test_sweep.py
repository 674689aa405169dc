"""Sweeps end to end: a real local Ray, real workers, a real SQLite study; a driver killed with SIGKILL."""
import json
import signal
import subprocess
import sys
import time

import optuna
import psutil
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks
from sensitivity.studies.storage import StorageError, open_storage
from sensitivity.sweep.recovery import configuration

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")

SPACE = """
study: {study}
dataset: digits
model: mlp
frameworks: [torch]
parameters:
  lr: {{type: float, low: 0.01, high: 0.3, log: true}}
  batch_size: {{type: categorical, choices: [32, 64]}}
fixed: {{epochs: {epochs}, optimizer: momentum, momentum: 0.9}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
val_fraction: 0.2
seeds: {seeds}
"""


# Epochs that keep a warm digits trial training for seconds, not tenths of one: a test that acts on the
# sweep while one trial is done and others run needs that window to be wider than its polling.
SLOW_EPOCHS = 100


def write_space(tmp_path, study="t", epochs=2, seeds=1, extra=""):
    path = tmp_path / f"{study}.yaml"
    path.write_text(SPACE.format(study=study, epochs=epochs, seeds=seeds) + extra)
    return path


def sweep(tmp_path, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", *map(str, args), "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def alive(pid) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def load(tmp_path, name="t"):
    return optuna.load_study(study_name=name, storage=f"sqlite:///{tmp_path}/results/optuna.db")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A sweep of 3 configurations x 2 seeds at --parallel 2, its folder."""
    tmp_path = tmp_path_factory.mktemp("recorded")
    proc = sweep(tmp_path, write_space(tmp_path, seeds=2), "--trials", 6, "--parallel", 2, "--seed", 1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp_path


def test_sweep_records_every_trial_with_its_curve(recorded):
    study = load(recorded)
    trials = study.get_trials()
    assert len(trials) == 6 and all(t.state == TrialState.COMPLETE for t in trials)
    for t in trials:
        assert t.user_attrs["status"] == "ok" and len(t.user_attrs["curve"]) == 2
        assert t.user_attrs["parallel"] == 2  # its train time was measured beside another trial
        assert sorted(t.intermediate_values) == [1, 2]  # per-epoch values: learning curves
        assert t.value == t.user_attrs["val_accuracy"] and t.user_attrs["accuracy"] is not None
        assert t.user_attrs["env"]["ray_node_id"]
    configs = {}
    for t in trials:
        configs.setdefault(t.user_attrs["config_id"], []).append(t)
    assert all(sorted(x.user_attrs["seed"] for x in group) == [0, 1] for group in configs.values())
    assert all(len({json.dumps(x.params, sort_keys=True) for x in group}) == 1 for group in configs.values())


def cli(cwd, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def timed(recorded):
    proc = cli(recorded, "timing", "t", "--configs", 2, "--seeds", 2, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load(recorded, "t-alone")


def test_timing_runs_the_best_configurations_alone_pinned_to_one_core_on_fresh_seeds(recorded, timed):
    from sensitivity.analysis.tables.seeds import seed_intervals
    from sensitivity.analysis.table import trials_table

    sweep = load(recorded)
    means = seed_intervals(trials_table(sweep), metrics=("val_accuracy",))
    best = means.sort_values("val_accuracy_mean", ascending=False, kind="stable")["config_id"]
    trials = sorted(timed.get_trials(), key=lambda t: t.number)
    assert len(trials) == 4 and all(t.user_attrs["status"] == "ok" for t in trials)
    timed_trials = [sweep.trials[t.user_attrs["timed_trial"]] for t in trials]
    assert [t.user_attrs["config_id"] for t in timed_trials] == list(best[:2]) * 2  # best first, seed by seed
    swept = {t.user_attrs["seed"] for t in sweep.trials if "seed" in t.user_attrs}
    fresh = [t.user_attrs["seed"] for t in trials]
    assert fresh == [max(swept) + 1] * 2 + [max(swept) + 2] * 2  # after the sweep's seeds, never one of them
    for alone, original in zip(trials, timed_trials):
        assert alone.user_attrs["timing"] == "alone" and alone.user_attrs["timed_study"] == "t"
        assert alone.user_attrs["fresh_seed"] is True and alone.user_attrs["spec"]["seed"] == alone.user_attrs["seed"]
        assert alone.user_attrs["env"]["pinned_cpus"] == [0] and alone.user_attrs["parallel"] == 1
        assert alone.user_attrs["spec"]["threads"] == 1 and alone.user_attrs["spec"]["pin_cpus"] == [0]
        same = ("lr", "batch_size", "epochs", "optimizer")
        assert {k: alone.user_attrs["spec"][k] for k in same} == {k: original.user_attrs["spec"][k] for k in same}


def test_findings_put_the_sweeps_times_beside_their_times_alone(recorded, timed):
    proc = cli(recorded, "findings", "t", "--with-study", "t-alone", "--verbose")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the sweep's train times ran at --parallel 2; over the same configurations timed alone" in proc.stdout
    assert "torch " in proc.stdout and "(2 configurations)" in proc.stdout
    proc = cli(recorded, "report", "t", "--with-study", "t-alone", "--out", "r.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    section = (recorded / "r.html").read_text().split('<section id="runtime">')[1].split("</section>")[0]
    assert "<td>torch</td>" in section and "Train time in the main study over the same configuration" in section


@pytest.mark.parametrize("args, message", [
    (["--parallel", 2], "it times each configuration alone: 1"),
    (["--configs", 0], "--configs"),
])
def test_timing_refuses_bad_input_in_one_line_and_writes_nothing(recorded, timed, args, message):
    proc = cli(recorded, "timing", "t", "--study", "t-refused", *args)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert "t-refused" not in optuna.get_all_study_names(f"sqlite:///{recorded}/results/optuna.db")


def test_timing_a_study_with_nothing_to_time_is_one_line(tmp_path):
    optuna.create_study(study_name="empty", storage=f"sqlite:///{tmp_path}/optuna.db")
    proc = cli(tmp_path, "timing", "empty", "--storage", f"sqlite:///{tmp_path}/optuna.db")
    assert proc.returncode == 2 and "has no sampled trial that finished with status ok" in proc.stderr
    assert optuna.get_all_study_names(f"sqlite:///{tmp_path}/optuna.db") == ["empty"]


def test_failing_trials_are_recorded_and_the_sweep_goes_on(tmp_path):
    space = write_space(tmp_path).read_text().replace("choices: [32, 64]", "choices: [32, 100000]")
    space = space.replace("{type: float, low: 0.01, high: 0.3, log: true}", "{type: categorical, choices: [0.05, 0.1]}")
    (tmp_path / "t.yaml").write_text(space)
    proc = sweep(tmp_path, tmp_path / "t.yaml", "--trials", 4, "--parallel", 2, "--sampler", "grid")
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = load(tmp_path).get_trials()
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert len(trials) == 4 and failed and len(failed) < 4
    assert all("batch_size 100000 exceeds" in t.user_attrs["reason"] for t in failed)


def test_kill_9_of_the_driver_then_resume_gives_exactly_n(tmp_path):
    space = write_space(tmp_path, epochs=SLOW_EPOCHS)
    args = [sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--trials", "6", "--parallel", "2",
            "--no-progress"]
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(args, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT)
    storage = f"sqlite:///{tmp_path}/results/optuna.db"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # kill while one trial is done and others run
        time.sleep(0.5)
        assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
        try:
            trials = optuna.load_study(study_name="t", storage=open_storage(storage)).get_trials()
        except (KeyError, StorageError):  # the driver has not made the study (or its folder) yet
            continue
        if any(t.state == TrialState.COMPLETE for t in trials) and any(t.state == TrialState.RUNNING for t in trials):
            break
    else:
        pytest.fail("no trial completed in 300 s: " + (tmp_path / "driver.log").read_text()[-3000:])
    ray_children = [p.pid for p in psutil.Process(driver.pid).children(recursive=True)]
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = {t.number: t.state for t in optuna.load_study(study_name="t", storage=storage).get_trials()}
    assert TrialState.RUNNING in before.values()

    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = load(tmp_path).get_trials()
    orphans = [t for t in trials if t.user_attrs.get("orphaned")]
    final = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
             and not t.user_attrs.get("orphaned")]
    assert len(final) == 6
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert {t.number for t in orphans} == {n for n, s in before.items() if s == TrialState.RUNNING}
    assert all(t.state == TrialState.FAIL for t in orphans)
    retries = [t.user_attrs["retry_of"] for t in trials if "retry_of" in t.user_attrs and not t.user_attrs.get("surplus")]
    drawn = [t for t in orphans if configuration(t) is not None]  # a kill right after `ask` leaves none
    assert sorted(retries) == sorted(t.number for t in drawn)  # each orphan with a configuration retried once
    for orphan in drawn:
        retry = next(t for t in trials if t.user_attrs.get("retry_of") == orphan.number)
        assert retry.params == configuration(orphan)
    assert all("drawn no configuration" in t.user_attrs["reason"] for t in orphans if t not in drawn)
    completed_before = {n for n, s in before.items() if s == TrialState.COMPLETE}
    assert completed_before <= {t.number for t in final}  # no completed trial lost
    assert not [pid for pid in ray_children if alive(pid)]  # the dead driver's Ray processes were ended
    assert f"orphans failed: {sorted(t.number for t in orphans)}" in proc.stdout
    assert ("orphans re-queued: " + str(sorted(t.number for t in drawn))) in proc.stdout if drawn else \
        "re-queued" not in proc.stdout


def test_a_sweep_whose_local_ray_dies_ends_with_one_line_and_resumes(tmp_path):
    space = write_space(tmp_path, epochs=SLOW_EPOCHS)
    args = [sys.executable, "-m", "sensitivity.cli", "sweep", str(space), "--trials", "4", "--parallel", "2",
            "--no-progress"]
    driver = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    storage = f"sqlite:///{tmp_path}/results/optuna.db"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # until a trial runs
        time.sleep(1)
        assert driver.poll() is None, driver.stderr.read()[-3000:]
        try:
            trials = optuna.load_study(study_name="t", storage=open_storage(storage)).get_trials()
        except (KeyError, StorageError):  # no study yet, or not even its folder: the driver is starting
            continue
        if any(t.state == TrialState.RUNNING for t in trials):
            break
    raylet = next(p for p in psutil.Process(driver.pid).children(recursive=True) if p.name() == "raylet")
    raylet.kill()
    try:
        _, stderr = driver.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        driver.kill()
        pytest.fail("the driver went on without its Ray for 120 s")
    assert driver.returncode == 1
    assert "sensitivity: the local Ray stopped (raylet ended)" in stderr and "run the same command again" in stderr

    proc = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = load(tmp_path).get_trials()
    final = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
             and not t.user_attrs.get("orphaned")]
    assert len(final) == 4 and all(t.state == TrialState.COMPLETE for t in final)
    assert [t for t in trials if t.user_attrs.get("orphaned")]  # the trials it left running, retried


@pytest.mark.parametrize("mutation, message", [
    (lambda s: s.replace("dataset: digits", "dataset: imagenet"), "dataset: unknown dataset 'imagenet'"),
    (lambda s: s.replace("frameworks: [torch]", "frameworks: [caffe2]"), "frameworks: unknown framework"),
    (lambda s: s.replace("low: 0.01, high: 0.3", "low: 0.3, high: 0.01"), "parameters.lr: low 0.3 is above"),
    (lambda s: s.replace("low: 0.01", "low: abc"), "parameters.lr.low: Input should be a valid number"),
    (lambda s: s + "colour: red\n", "colour: unknown key; allowed: study"),
    (lambda s: s.replace("type: float", "type: real"), "parameters.lr: type must be one of"),
    (lambda s: s.replace("epochs: 2", "epochs: 0"), "fixed.epochs"),
    (lambda s: s.replace("choices: [32, 64]", "choices: [32, big]"), "parameters.batch_size.choices[1]: Input should"),
    (lambda s: s.replace("{type: categorical, choices: [32, 64]}", "{type: float, low: 16, high: 64}"),
     "parameters.batch_size.type: batch_size takes int values; allowed types: int, categorical"),
    (lambda s: s.replace("low: 0.01, high: 0.3, log: true", "low: -1, high: 0.3"),
     "parameters.lr.low: Input should be greater than 0"),
    (lambda s: s.replace("parameters:", "parameters:\n  momentum: {type: float, low: 0.5, high: 5}")
     .replace(", momentum: 0.9", ""), "parameters.momentum.high: Input should be less than 1"),
    (lambda s: s.replace("parameters:", "parameters:\n  optimizer: {type: categorical, choices: [sgd, adamw]}")
     .replace(", optimizer: momentum", ""), "parameters.optimizer.choices[1]: Input should be 'sgd'"),
    (lambda s: s.replace("metric: val_accuracy", "metric: accuracy"),
     "objectives.0.metric: Input should be 'val_accuracy', 'loss'"),
])
def test_malformed_space_is_one_line_exit_2_and_no_study(tmp_path, mutation, message):
    path = tmp_path / "bad.yaml"
    path.write_text(mutation(SPACE.format(study="bad", epochs=2, seeds=1)))
    proc = sweep(tmp_path, path, "--trials", 2)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "bad.yaml" in lines[0] and message in lines[0], proc.stderr
    assert not (tmp_path / "results" / "optuna.db").exists()


def test_pruner_with_several_objectives_is_a_usage_error(tmp_path):
    space = write_space(tmp_path).read_text().replace(
        "objectives: [{metric: val_accuracy, direction: maximize}]",
        "objectives: [{metric: val_accuracy, direction: maximize}, {metric: train_time_s, direction: minimize}]")
    (tmp_path / "t.yaml").write_text(space)
    proc = sweep(tmp_path, tmp_path / "t.yaml", "--trials", 2, "--pruner", "asha")
    assert proc.returncode == 2 and "pruning needs a single objective" in proc.stderr


def test_resuming_with_a_changed_space_is_refused(tmp_path):
    assert sweep(tmp_path, write_space(tmp_path), "--trials", 1).returncode == 0
    changed = write_space(tmp_path, epochs=3)
    proc = sweep(tmp_path, changed, "--trials", 2)
    assert proc.returncode == 2 and "another search space" in proc.stderr
    assert len(load(tmp_path).get_trials()) == 1
    assert sweep(tmp_path, changed, "--trials", 2, "--allow-space-change").returncode == 0
    assert len(load(tmp_path).get_trials()) == 2


def test_unreachable_storage_is_reported_before_any_trial(tmp_path):
    proc = sweep(tmp_path, write_space(tmp_path), "--trials", 1,
                 "--storage", "postgresql://nobody:secret@127.0.0.1:1/none")
    assert proc.returncode == 2 and "cannot be opened" in proc.stderr and "secret" not in proc.stderr


def test_asha_stops_weak_trials_and_they_are_pruned_not_complete(tmp_path):
    space = write_space(tmp_path, epochs=4).read_text().replace(
        "{type: float, low: 0.01, high: 0.3, log: true}", "{type: categorical, choices: [0.2, 0.0005, 0.0002, 0.1]}")
    (tmp_path / "t.yaml").write_text(space)
    proc = sweep(tmp_path, tmp_path / "t.yaml", "--trials", 6, "--parallel", 2, "--pruner", "asha", "--seed", 3)
    assert proc.returncode == 0, proc.stderr[-3000:]
    trials = load(tmp_path).get_trials()
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert pruned and len(pruned) + len(complete) == 6
    for t in pruned:
        assert t.user_attrs["status"] == "pruned" and 1 <= len(t.intermediate_values) < 4
        assert t.value == t.intermediate_values[max(t.intermediate_values)]  # its last value
    assert all(len(t.user_attrs["curve"]) == 4 for t in complete)
