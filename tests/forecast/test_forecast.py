"""The forecast's computation: the slots' wall time, the sums, a sampled space's expected cost."""
import math

import pytest

from sensitivity.forecast.estimate import Run, draw_configurations, forecast, makespan, text
from sensitivity.forecast.probe import Cell
from sensitivity.forecast.runs import trial_slots
from sensitivity.config.spaces import load_space

CELL = Cell("torch", "mlp", (1, 8, 8), 10, 32)
FIGURES = {CELL: {"step_s": 0.01, "eval_samples_per_s": 1000.0, "compile_s": 0.5}}


@pytest.mark.portable
def test_makespan_takes_the_longest_first_on_the_first_free_slot():
    assert makespan([3, 3, 2, 2, 2], 2) == 7  # LPT: 3+2+2 | 3+2
    assert makespan([5, 1, 1], 1) == 7
    assert makespan([], 4) == 0


@pytest.mark.portable
def test_forecast_sums_train_evaluation_and_compile_of_the_runs_that_run():
    runs = [Run(CELL, "digits", steps=100, epochs=2, eval_samples=500, count=3),
            Run(CELL, "cifar10", steps=10_000, epochs=5, eval_samples=500, status="not run: files absent")]
    found = forecast(runs, FIGURES, slots=2, cpus_per_trial=2)
    assert found.train_s == pytest.approx(3 * 100 * 0.01)
    assert found.wall_trial_s == pytest.approx(3 * (1.0 + 2 * 500 / 1000 + 0.5))
    assert found.wall_s == pytest.approx(2 * 2.5)  # three trials of 2.5 s on two slots
    assert found.core_hours == pytest.approx(found.wall_trial_s * 2 / 3600)
    assert found.energy_kwh is None and any("energy" in n for n in found.notes)
    absent = next(r for r in found.rows if r["status"] != "run")
    assert absent["train_s"] == pytest.approx(100.0)  # forecast, never summed with what runs
    printed = text(found, "plan")
    assert "not run: files absent" in printed and "wall 5 s on 2 slots" in printed


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
