"""Sweeps end to end where something goes wrong: failing and diverging trials under a pruner, a time budget
that runs out, per-trial timeouts, an unreachable cluster, resources the cluster lacks, a missing
environment; and the samplers not covered elsewhere. Tiny: digits with the MLP, one or two epochs."""
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")

SPACE = """
study: f
dataset: digits
model: mlp
frameworks: [torch]
parameters:
  lr: {lr}
  batch_size: {{type: categorical, choices: {batches}}}
fixed: {{epochs: {epochs}, optimizer: momentum, momentum: 0.9}}
objectives: {objectives}
seeds: {seeds}
"""
ONE = "[{metric: val_accuracy, direction: maximize}]"
TWO = "[{metric: val_accuracy, direction: maximize}, {metric: train_time_s, direction: minimize}]"


def write(tmp_path, lr="{type: float, low: 0.01, high: 0.3, log: true}", batches="[32, 64]", epochs=1,
          objectives=ONE, seeds=1):
    path = tmp_path / "f.yaml"
    path.write_text(SPACE.format(lr=lr, batches=batches, epochs=epochs, objectives=objectives, seeds=seeds))
    return path


def cli(tmp_path, *args, env=None, timeout=600):
    import os
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def sweep(tmp_path, *args, **kw):
    return cli(tmp_path, "sweep", *args, "--no-progress", **kw)


def trials(tmp_path):
    return optuna.load_study(study_name="f", storage=f"sqlite:///{tmp_path}/results/optuna.db").get_trials()


def unfinished(ts):
    return [t for t in ts if t.state in (TrialState.RUNNING, TrialState.WAITING)]


def one_line(proc, text):
    lines = proc.stderr.strip().splitlines()
    return proc.returncode == 2 and len(lines) == 1 and text in lines[0]


def test_asha_with_failing_and_diverging_trials_finishes_every_trial(tmp_path):
    space = write(tmp_path, lr="{type: categorical, choices: [0.05, 1000000.0]}", batches="[32, 100000]", epochs=2)
    proc = sweep(tmp_path, space, "--trials", 4, "--parallel", 2, "--sampler", "grid", "--pruner", "asha")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    assert len(ts) == 4 and not unfinished(ts)
    failed = [t for t in ts if t.state == TrialState.FAIL]
    assert len(failed) == 2 and all(t.params["batch_size"] == 100000 for t in failed)
    assert all("batch_size 100000 exceeds" in t.user_attrs["reason"] for t in failed)
    diverged = next(t for t in ts if t.params == {"framework": "torch", "lr": 1e6, "batch_size": 32})
    assert diverged.state == TrialState.COMPLETE and diverged.user_attrs["status"] == "diverged"
    assert diverged.value == diverged.user_attrs["val_accuracy"] < 0.3  # measured, chance level


def test_hyperband_prunes_without_restarting_trials(tmp_path):
    space = write(tmp_path, lr="{type: categorical, choices: [0.2, 0.0005, 0.0002, 0.1]}", epochs=4)
    proc = sweep(tmp_path, space, "--trials", 6, "--parallel", 2, "--pruner", "hyperband", "--seed", 3)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    assert len(ts) == 6 and all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in ts), described(ts)
    for t in ts:  # one run per trial: epochs 1..k once each, the curve as long as the reports
        assert sorted(t.intermediate_values) == list(range(1, len(t.intermediate_values) + 1))
        assert [p["epoch"] for p in t.user_attrs["curve"]] == sorted(t.intermediate_values)
    for t in ts:
        if t.state == TrialState.PRUNED:
            assert t.user_attrs["status"] == "pruned" and len(t.intermediate_values) < 4
            assert t.user_attrs["val_accuracy"] == t.value
        else:
            assert len(t.intermediate_values) == 4


def test_a_trial_tune_cannot_reuse_an_actor_for_runs_again_and_the_sweep_ends(tmp_path):
    # Ray Tune waits this long for a reused actor's last trial to end, else sets the new trial ERROR and tells
    # no searcher: with 0 every reuse fails, and a sweep used to wait for the trial for ever
    proc = sweep(tmp_path, write(tmp_path), "--trials", 4, "--parallel", 2,
                 env={"TUNE_FUNCTION_THREAD_TIMEOUT_S": "0"}, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    dropped = [t for t in ts if t.user_attrs.get("orphaned")]
    final = [t for t in ts if not t.user_attrs.get("orphaned")]
    assert not unfinished(ts) and len(final) == 4 and all(t.state == TrialState.COMPLETE for t in final), described(ts)
    assert dropped and all(t.user_attrs["not_run"] and "Ray Tune ended the trial in error before it ran" in
                           t.user_attrs["reason"] for t in dropped), described(ts)
    assert sorted(t.user_attrs["retry_of"] for t in ts if "retry_of" in t.user_attrs) == [t.number for t in dropped]
    assert all(t.user_attrs.get("attempt", 1) == 1 for t in ts)  # a trial that never ran takes no attempt


def described(ts) -> str:
    """Each trial's number, state and reason: what a failed assertion on a sweep's trials shows."""
    return "; ".join(f"{t.number} {t.state.name} {t.user_attrs.get('reason', '')}" for t in ts)


def test_time_budget_leaves_nothing_running_and_a_rerun_reaches_n(tmp_path):
    proc = sweep(tmp_path, write(tmp_path, epochs=5000), "--trials", 2, "--parallel", 2, "--time-budget", 8)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    assert not [t for t in ts if t.state == TrialState.RUNNING]
    stopped = [t for t in ts if t.state == TrialState.FAIL]
    assert len(stopped) == 2 and all(t.user_attrs["interrupted"] and t.user_attrs["orphaned"] for t in stopped)
    assert all("interrupted: time budget" in t.user_attrs["reason"] for t in stopped)
    proc = sweep(tmp_path, write(tmp_path, epochs=1), "--trials", 2, "--parallel", 2, "--allow-space-change")
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    final = [t for t in ts if not t.user_attrs.get("orphaned")]
    assert len(final) == 2 and all(t.state == TrialState.COMPLETE for t in final) and not unfinished(ts)
    assert sorted(t.user_attrs["retry_of"] for t in final) == sorted(t.number for t in stopped)


def test_timeout_per_trial_is_fail_with_its_reason(tmp_path):
    proc = sweep(tmp_path, write(tmp_path, epochs=5000), "--trials", 1, "--timeout-per-trial", 3)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (t,) = trials(tmp_path)
    assert t.state == TrialState.FAIL and t.user_attrs["status"] == "timeout"
    assert "3 s timeout" in t.user_attrs["reason"]


def test_random_sampler_with_seeds_not_dividing_n_and_studies_show_best(tmp_path):
    proc = sweep(tmp_path, write(tmp_path, seeds=2), "--trials", 3, "--sampler", "random", "--parallel", 2)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    assert len(ts) == 3 and all(t.state == TrialState.COMPLETE for t in ts)
    assert sorted(sum(t.user_attrs["config_id"] == c for t in ts) for c in {t.user_attrs["config_id"] for t in ts}) \
        == [1, 2]
    shown = cli(tmp_path, "studies", "show", "--storage", f"sqlite:///{tmp_path}/results/optuna.db", "f")
    best = max(ts, key=lambda t: t.value)
    assert shown.returncode == 0 and f"best trial: #{best.number} " in shown.stdout, shown.stderr


@pytest.mark.parametrize("sampler, objectives", [("qmc", ONE), ("nsga2", TWO)])
def test_samplers_run_a_small_sweep(tmp_path, sampler, objectives):
    proc = sweep(tmp_path, write(tmp_path, objectives=objectives), "--trials", 2, "--sampler", sampler,
                 "--parallel", 2, "--seed", 1)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ts = trials(tmp_path)
    assert len(ts) == 2 and all(t.state == TrialState.COMPLETE and t.user_attrs["curve"] for t in ts)


def test_unreachable_address_is_one_line_and_no_study(tmp_path):
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--address", "127.0.0.1:1", timeout=60)
    assert one_line(proc, "--address 127.0.0.1:1: no Ray cluster reachable"), proc.stderr
    assert not (tmp_path / "results" / "optuna.db").exists()


def test_more_gpus_per_trial_than_the_cluster_has_is_one_line_and_no_study(tmp_path):
    proc = sweep(tmp_path, write(tmp_path), "--trials", 1, "--gpus-per-trial", 1, timeout=300)
    lines = [line for line in proc.stderr.strip().splitlines() if "Token authentication" not in line]  # Ray's
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    # this machine's builds are CPU-only, which is found first; a GPU build without a GPU meets Ray's check
    assert lines[0].startswith("sensitivity sweep: --gpus-per-trial 1: ")
    assert "no Ray node holds that" in lines[0] or "cannot use a GPU here" in lines[0], lines[0]
    db = tmp_path / "results" / "optuna.db"
    assert not db.exists() or not optuna.get_all_study_summaries(f"sqlite:///{db}", include_best_trial=False)


def test_missing_framework_environment_is_one_line_and_no_study(tmp_path):
    space = write(tmp_path).read_text().replace("frameworks: [torch]", "frameworks: [mxnet]")
    (tmp_path / "f.yaml").write_text(space)
    proc = sweep(tmp_path, tmp_path / "f.yaml", "--trials", 1, env={"SENSITIVITY_PYTHON_LEGACY": "/nonexistent"})
    assert one_line(proc, "framework mxnet cannot run here: environment legacy missing"), proc.stderr
    assert not (tmp_path / "results" / "optuna.db").exists()


def test_studies_commands_on_a_fresh_folder_create_nothing(tmp_path):
    for args in (["studies"], ["studies", "list"], ["studies", "show", "x"], ["export", "x"]):
        proc = cli(tmp_path, *args, timeout=120)
        assert one_line(proc, "no such file"), (args, proc.stderr)
    assert not (tmp_path / "results").exists()
