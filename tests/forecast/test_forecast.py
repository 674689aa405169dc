"""The forecast's computation: the slots' wall time, the sums, a sampled space's expected cost."""
import math

import pytest

from sensitivity.forecast.estimate import Run, draw_configurations, forecast, makespan, text
from sensitivity.forecast.probe import Cell
from sensitivity.forecast.runs import trial_slots
from sensitivity.config.spaces import load_space

CELL = Cell("torch", "mlp", (1, 8, 8), 10, 32)
FIGURES = {CELL: {"step_s": 0.01, "eval_samples_per_s": 1000.0, "compile_s": 0.5, "cold_start_s": 2.0}}
COSTS = ({"before_s": 3.0, "actor_s": 1.5, "per_trial_s": 0.4}, True)  # as `forecast.overhead.read` gives them
TRIAL_OVERHEAD_S = COSTS[0]["per_trial_s"]


@pytest.mark.portable
def test_makespan_takes_the_longest_first_on_the_first_free_slot():
    assert makespan([3, 3, 2, 2, 2], 2) == 7  # LPT: 3+2+2 | 3+2
    assert makespan([5, 1, 1], 1) == 7
    assert makespan([], 4) == 0


@pytest.mark.portable
def test_forecast_sums_train_evaluation_and_compile_of_the_runs_that_run():
    runs = [Run(CELL, "digits", steps=100, epochs=2, eval_samples=500, count=3),
            Run(CELL, "cifar10", steps=10_000, epochs=5, eval_samples=500, status="not run: files absent")]
    found = forecast(runs, FIGURES, slots=2, cpus_per_trial=2, local_ray=False, overhead=COSTS)
    assert found.train_s == pytest.approx(3 * 100 * 0.01)
    assert found.wall_trial_s == pytest.approx(3 * (1.0 + 2 * 500 / 1000 + 0.5))
    # three trials of 2.5 s and the overhead on two slots, the first on each slot starting its worker (2 s)
    trial = 2.5 + TRIAL_OVERHEAD_S
    assert found.wall_s == pytest.approx(3.0 + 1.5 + 2 + trial + trial) and found.startup_s == pytest.approx(2 * 2.0)
    assert found.core_hours == pytest.approx(found.wall_trial_s * 2 / 3600)
    assert found.energy_kwh is None and any("energy" in n for n in found.notes)
    absent = next(r for r in found.rows if r["status"] != "run")
    assert absent["train_s"] == pytest.approx(100.0)  # forecast, never summed with what runs
    printed = text(found, "plan")
    assert "not run: files absent" in printed and f"wall {4.5 + 2 + 2 * trial:.1f} s on 2 slots" in printed
    assert any("start-ups counted cold" in n for n in found.notes)
    assert any("measured on this host's last sweep" in n for n in found.notes)
    assert any("defaults, until a sweep" in n for n in forecast(runs, FIGURES, slots=2).notes)


@pytest.mark.portable
def test_each_slot_starts_a_framework_once():
    other = Cell("jax", "mlp", (1, 8, 8), 10, 32)
    figures = {**FIGURES, other: {**FIGURES[CELL], "cold_start_s": 5.0}}
    runs = [Run(CELL, "digits", steps=100, epochs=2, eval_samples=500, count=6),
            Run(other, "digits", steps=100, epochs=2, eval_samples=500, count=1)]
    found, trial = forecast(runs, figures, slots=2, local_ray=False, overhead=COSTS), 2.5 + TRIAL_OVERHEAD_S
    assert found.startup_s == pytest.approx(2 * 2.0 + 1 * 5.0)  # torch on both slots, jax on one
    assert found.wall_s == pytest.approx(4.5 + makespan([2 + trial] * 2 + [trial] * 4 + [5 + trial], 2))


@pytest.mark.portable
def test_energy_is_forecast_where_the_probe_read_the_gpu_counter():
    figures = {CELL: {**FIGURES[CELL], "joules_per_step": 36.0}}
    found = forecast([Run(CELL, "digits", steps=1000, epochs=1, eval_samples=0)], figures, slots=1)
    assert found.energy_kwh == pytest.approx(1000 * 36.0 / 3.6e6)


def test_draws_keep_the_space_distributions():
    space = load_space("search_spaces/mnist5k.yaml")
    draws = draw_configurations(space, 500)
    assert {d["batch_size"] for d in draws} == {32, 64, 128}
    assert {d["framework"] for d in draws} == set(space.frameworks)
    lrs = [d["lr"] for d in draws]
    assert min(lrs) >= 0.001 and max(lrs) <= 0.3
    median = sorted(lrs)[250]  # log-uniform: the median is the geometric mean of the bounds
    assert math.isclose(math.log(median), math.log(math.sqrt(0.001 * 0.3)), abs_tol=0.4)
    assert all(d["epochs"] == 3 for d in draws)


@pytest.mark.portable
def test_slots_are_parallel_at_most_what_the_resources_hold():
    assert trial_slots(8, 1, 0, {"CPU": 2}) == 2
    assert trial_slots(1, 1, 0, {"CPU": 16}) == 1
    assert trial_slots(8, 2, 0.5, {"CPU": 16, "GPU": 1}) == 2
    assert trial_slots(4, 1, 1, {"CPU": 16}) == 0  # no GPU: nothing can run


@pytest.mark.portable
def test_cells_not_run_are_totalled_apart():
    runs = [Run(CELL, "cifar10", steps=360_000, epochs=5, eval_samples=0, count=2, status="not run: files absent")]
    printed = text(forecast(runs, FIGURES, slots=1), "plan")
    assert "total (runs): 0 trials" in printed
    assert "total (not run): 2 trials, train 2.0 h summed" in printed


def test_a_runs_overheads_are_measured_from_its_trials_and_kept_for_the_next_forecast(tmp_path, monkeypatch):
    """Two slots, three trials each: the first trial of a slot pays its actor, the later ones the per-trial
    overhead and the gap before them; the figures are kept per host and read back for the next forecast."""
    import datetime

    import optuna

    from sensitivity.forecast import overhead

    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path))
    start, trials = datetime.datetime(2026, 1, 1, 12, 0, 0), []
    for slot in (1, 2):
        at = start
        for i, (span, worker) in enumerate([(9.0, 4.0), (1.5, 1.0), (1.6, 1.0)]):  # outside the worker: 5, .5, .6
            trial = optuna.trial.create_trial(value=0.9, user_attrs={
                "driver": "d", "env": {"ray_actor_pid": slot, "worker": {"span_s": worker}}})
            at = at + datetime.timedelta(seconds=0.2 if i else 0)  # the gap after the trial before
            trial.datetime_start, trial.datetime_complete = at, at + datetime.timedelta(seconds=span)
            at = trial.datetime_complete
            trials.append(trial)
    figures = overhead.measured(trials, start.timestamp() - 7.0)
    assert figures["before_s"] == pytest.approx(7.0)
    assert figures["actor_s"] == pytest.approx(5.0)
    assert figures["per_trial_s"] == pytest.approx(0.75)  # median of 0.7 and 0.8 (0.5 + 0.2, 0.6 + 0.2)
    assert overhead.read(local_ray=True) == (overhead.DEFAULTS, False)
    overhead.record(figures, local_ray=True)
    assert overhead.read(local_ray=True) == ({k: round(v, 3) for k, v in figures.items()}, True)
    assert overhead.read(local_ray=False) == (overhead.DEFAULTS, False)  # a cluster's are its own


def test_a_runs_load_correction_counts_the_threads_its_trials_asked_for(tmp_path, monkeypatch):
    """`keep_run` reads the slots and threads of this driver's trials as the driver holds them: their `env`
    (the driver's copy of a trial leaves out its `spec`, where the threads were read, always 1, before)."""
    import optuna

    from sensitivity.forecast import overhead

    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path))
    study = optuna.create_study()
    for driver in ("d", "d", "other"):
        study.add_trial(optuna.trial.create_trial(value=0.9, user_attrs={
            "driver": driver, "parallel": 2 if driver == "d" else 8,
            "env": {"threads_requested": 3 if driver == "d" else 16, "worker": {"span_s": 1.0}}}))
    asked = []
    real = overhead.slowdown
    monkeypatch.setattr(overhead, "slowdown", lambda *args: asked.append(args) or real(*args))
    overhead.keep_run(study, "d", 2, local_ray=False)
    assert asked == [(2, 3, None)] and study.user_attrs["last_run"]["trials"] == 2


@pytest.mark.portable
def test_a_local_sweeps_wall_is_scaled_by_the_share_of_the_cores_the_load_leaves_it():
    from sensitivity.forecast.load import DRIVER_CORES, slowdown

    assert slowdown(1, 1, None) == slowdown(1, 1, 0.0) == 1.0  # no load measured: a quiet machine's
    assert slowdown(1, 1, 0.5, cores=4) == 1.0  # room beside it
    assert slowdown(1, 1, 1.0, cores=2) == pytest.approx((1 + DRIVER_CORES + 1.0) / 2)  # one busy process, 2 cores
    assert slowdown(2, 1, 1.0, cores=2) == pytest.approx((2 + DRIVER_CORES + 1.0) / (2 + DRIVER_CORES))
    runs = [Run(CELL, "digits", steps=100, epochs=2, eval_samples=500, count=3)]
    quiet = forecast(runs, FIGURES, slots=1, overhead=COSTS)
    busy = forecast(runs, FIGURES, slots=1, overhead=COSTS, others=3.0)
    factor = slowdown(1, 1, 3.0)
    assert busy.wall_s == pytest.approx(quiet.wall_s * factor) and busy.slowdown == pytest.approx(factor) and factor > 1
    assert busy.train_s == quiet.train_s  # the trials' own figures stay a quiet machine's; the wall says the load
    (note,) = [n for n in busy.notes if n.startswith("load:")]
    assert "other processes kept 3.0 of this machine's" in note and f"{factor:.2f} times" in note
    cluster = forecast(runs, FIGURES, slots=1, overhead=COSTS, others=3.0, local_ray=False)
    assert cluster.wall_s == pytest.approx(quiet.wall_s) and not [n for n in cluster.notes if n.startswith("load:")]
