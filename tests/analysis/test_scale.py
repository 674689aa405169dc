"""What keeps the analysis of a large study bounded says so, and computes its statistics from every trial:
importance on a documented random subsample, figures drawing a capped number of points or curves."""
import numpy as np
import pandas as pd
import pytest
from analysis_data import frame

from sensitivity.analysis.rankings import importance as importance_module
from sensitivity.analysis.figures import curves as curves_figure
from sensitivity.analysis.figures import frontier as frontier_figure
from sensitivity.analysis.figures import layout  # where the caps live and the study figures read them
from sensitivity.analysis.figures import slice as slice_figure
from sensitivity.analysis.report.importance import importance_html
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.table import trials_table


def large_table(n=400, seed=0):
    """n trials of two frameworks over lr and a dummy; accuracy peaks at lr 0.01, each with a 3-epoch curve."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        lr = float(10 ** rng.uniform(-4, 0))
        accuracy = float(np.clip(0.97 - 0.1 * (np.log10(lr) + 2) ** 2 + rng.normal(0, 0.01), 0.05, 1.0))
        curve = [{"epoch": e, "train_loss": 1.0 / e, "val_accuracy": accuracy * e / 3, "test_accuracy": accuracy,
                  "seconds": float(e)} for e in (1, 2, 3)]
        rows.append(dict(framework=["torch", "jax"][i % 2], lr=lr, dummy=float(rng.uniform()), accuracy=accuracy,
                         val_accuracy=accuracy, train_time_s=float(rng.uniform(1, 100)), config_id=f"c{i}",
                         seed=i % 3, curve=curve))
    return trials_table(frame(*rows))


def test_importance_past_its_cap_runs_on_a_seeded_subsample_and_says_so(monkeypatch):
    table = large_table()
    monkeypatch.setattr(importance_module, "SUBSAMPLE_MAX", 150)
    found = importance_module.parameter_importance(table, evaluators=("ped_anova",), resamples=10)
    out = found.rows
    assert found.subsample == {"canonical": [150, 400]}
    assert set(out["n_trials"]) == {150}
    assert out[out["evaluator"].eq("ped_anova")].set_index("parameter")["importance"].idxmax() == "lr"
    again = importance_module.parameter_importance(table, evaluators=("ped_anova",), resamples=10)
    pd.testing.assert_frame_equal(out, again.rows)  # seeded: the same subsample every time
    monkeypatch.setattr(importance_module, "parameter_importance", lambda t: again)
    monkeypatch.setattr("sensitivity.analysis.report.importance.parameter_importance", lambda t: again)
    assert "a random subsample of 150 of 400 sampled trials" in importance_html(table)


def test_importance_under_its_cap_uses_every_trial():
    out = importance_module.parameter_importance(large_table(120), evaluators=("ped_anova",), resamples=10)
    assert out.subsample == {} and set(out.rows["n_trials"]) == {120}


def test_frontier_figure_draws_a_capped_cloud_but_every_frontier_point(monkeypatch):
    table = large_table()
    monkeypatch.setattr(layout, "POINTS_MAX", 50)
    frontier = runtime_accuracy_frontier(table)
    fig = frontier_figure.plot(frontier)
    ok = frontier.points[frontier.points["outcome"].eq("ok")]
    for framework, rows in ok.groupby("framework"):
        cloud = next(t for t in fig.data if t.name.startswith(framework) and "hypervolume" in t.name)
        assert len(cloud.x) == 50 and f"drawn: 50 of {len(rows)}" in cloud.name
        assert f"n={len(rows)} trials" in cloud.name  # the count is of every trial
        front = rows[rows["on_framework_frontier"] | rows["on_frontier"]]
        assert set(front["train_time_s"]) <= set(cloud.x)  # no frontier point left out of the cloud
        line = next(t for t in fig.data if t.name == f"{framework} frontier")
        assert len(line.x) == rows["on_framework_frontier"].sum()  # the frontier itself from every trial


def test_slice_draws_at_most_the_cap_and_counts_every_trial(monkeypatch):
    monkeypatch.setattr(layout, "POINTS_MAX", 40)
    fig = slice_figure.plot(slice_figure.compute(large_table()))
    assert fig.data and all(len(t.x) <= 40 for t in fig.data if t.mode == "markers" and "default" not in t.name)
    assert any("n=200 trials; drawn: 40 of 200" in t.name for t in fig.data)


def test_curves_draw_a_capped_number_but_the_median_is_of_every_trial(monkeypatch):
    monkeypatch.setattr(curves_figure, "CURVES_MAX", 10)
    curves = curves_figure.compute(large_table())
    fig = curves_figure.plot(curves)
    for framework, rows in curves.rows.groupby("framework"):
        faint = next(t for t in fig.data if t.name.startswith(framework) and "curves drawn" in t.name)
        assert np.isnan(faint.x).sum() == 9  # 10 curves, 9 gaps between them
        assert "n=200 trials" in faint.name and "curves drawn: 10 of 200" in faint.name
        median = next(t for t in fig.data if t.name == f"{framework} median")
        expected = rows.groupby("epoch")["val_accuracy"].median().to_numpy()
        np.testing.assert_allclose(np.asarray(median.y, float), expected)


def test_a_frontier_is_computed_once_per_table():
    table = large_table(60)
    assert runtime_accuracy_frontier(table) is runtime_accuracy_frontier(table)
    assert runtime_accuracy_frontier(table.copy()) is not runtime_accuracy_frontier(table)


@pytest.mark.parametrize("n", [5, 50])
def test_drawn_keeps_the_marked_rows(n):
    rows = pd.DataFrame({"x": range(100)})
    keep = rows["x"].isin([3, 97])
    chosen, note = layout.drawn(rows, n, keep=keep)
    assert len(chosen) == n and {3, 97} <= set(chosen["x"]) and note == f"; drawn: {n} of 100"
    chosen, note = layout.drawn(rows, 100)
    assert chosen is rows and note == ""


def test_seeds_needed_leaves_scipy_stats_unimported():
    """scipy.stats takes seconds to import; `sensitivity findings` needs only scipy.special's ufuncs."""
    import subprocess
    import sys

    code = ("import sys; from sensitivity.analysis.intervals import difference; "
            "from sensitivity.analysis.statistics import seeds_needed; "
            "print(seeds_needed(0.02, 0.015), difference([1, 2, 3], [2, 3, 5]).p is not None, "
            "'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["True", "False"] and int(out[0]) >= 3
