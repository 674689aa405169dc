"""Parallel coordinates and partial dependence with ICE curves (issue 43): their data (axes as the space gives them,
caps that say so, a surrogate that finds the planted optimum), `plot --kind` and `export --figure` on a plain Optuna
study, and both drawn by Chromium in the report of a study another program wrote."""
import json
import math

import numpy as np
import optuna
import pytest
from analysis_data import make_study

from sensitivity.analysis.figure_table import figure, figure_data
from sensitivity.analysis.figures import dependence, parallel
from sensitivity.cli import main


@pytest.fixture(scope="module")
def study():
    return make_study(n_configs=40, seeds=1, defaults=(0,))


def test_parallel_coordinates_put_each_parameter_on_the_axis_its_space_gives_it(study):
    info = figure_data(study, "parallel")
    axes = info.axes.set_index("parameter")
    assert axes.loc["lr", "axis"] == "log" and axes.loc["momentum", "axis"] == "linear"
    assert axes.loc["optimizer", "axis"] == "category" and axes.loc["optimizer", "levels"] == "adam|momentum|sgd"
    assert axes.loc["batch_size", "axis"] == "log" and info.objective == "accuracy" and info.drawn == [40, 40]
    trial = study.trials[3]
    row = info.rows[info.rows["number"].eq(trial.number)].iloc[0]
    assert row["param_lr"] == pytest.approx(math.log10(trial.params["lr"]))
    assert row["param_optimizer"] == ["adam", "momentum", "sgd"].index(trial.params["optimizer"])
    drawn = figure(study, "parallel").data[0]
    labels = [d.label for d in drawn.dimensions]
    assert labels[-1] == "accuracy" and "lr (log)" in labels
    lr = drawn.dimensions[labels.index("lr (log)")]
    assert list(lr.ticktext) == ["0.0001", "0.001", "0.01", "0.1", "1"]
    assert list(drawn.line.color) == list(info.rows["objective"])  # coloured by the objective


def test_parallel_coordinates_draw_at_most_the_cap_and_say_so_keeping_the_best(study):
    info = parallel.compute(study, lines=20)
    assert info.drawn == [20, 40] and len(info.rows) == 20
    best = figure_data(study, "parallel").rows.nlargest(10, "objective")["number"]  # half of 20
    assert set(best) <= set(info.rows["number"])  # accuracy: the highest are the best
    assert "drawn: 20 of 40 trained trials, the best 10 among them" in parallel.plot(info).layout.title.text


def test_partial_dependence_is_the_mean_of_the_ice_curves_and_finds_the_planted_optimum(study):
    info = dependence.compute(study, curves=1000)  # every trial a curve: their mean is the partial dependence
    lr = info.rows[info.rows["parameter"].eq("lr")]
    mean = lr[lr["curve"].eq(-1)].set_index("x")["y"]
    ice = lr[lr["curve"].ge(0)].groupby("x")["y"].mean()
    assert np.allclose(mean.sort_index().to_numpy(), ice.sort_index().to_numpy())
    assert -3.0 < mean.idxmax() < -1.0  # accuracy peaks at lr 0.01 in the planted study (log10 -2)
    assert info.fitted.iloc[0]["curves"] == 40 and len(lr["x"].unique()) == dependence.GRID_POINTS
    optimizer = info.rows[info.rows["parameter"].eq("optimizer")]
    assert sorted(optimizer["x"].unique()) == [0.0, 1.0, 2.0]  # every level of a category
    capped = dependence.compute(study, curves=5)
    assert capped.rows["curve"].max() == 4
    drawn = dependence.plot(capped)
    assert drawn.layout.title.text.endswith("accuracy (fitted to 40 of 40 trials) (regime: canonical)")  # named once
    assert {t.name.split(",")[0] for t in drawn.data} == {"ICE", "partial dependence"}


def test_a_discrete_parameter_is_read_and_ticked_at_the_values_it_can_take():
    """No batch size lies between 32 and 64, no layer count between 2 and 3: their curves are read at the choices
    and the integers the trials span, a continuous parameter's at GRID_POINTS values; parallel coordinates tick
    them at those values."""
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: t.suggest_categorical("batch_size", [16, 32, 64]) / 64 + t.suggest_int("layers", 1, 4)
                   - t.suggest_float("lr", 1e-4, 1, log=True), n_trials=60)
    info = dependence.compute(study)
    means = info.rows[info.rows["curve"].eq(-1)]
    read = {name: sorted(part["x"].round(6)) for name, part in means.groupby("parameter")}
    assert read["batch_size"] == [16, 32, 64] and read["layers"] == [1, 2, 3, 4]
    assert len(read["lr"]) == dependence.GRID_POINTS
    axes = figure(study, "parallel").data[0].dimensions
    ticks = {d.label: list(d.ticktext or ()) for d in axes}
    assert ticks["batch_size"] == ["16", "32", "64"] and ticks["layers"] == ["1", "2", "3", "4"]
    assert list(axes[0].tickvals) == [16, 32, 64]  # a linear axis: at the values themselves
    panels = dependence.plot(info).layout  # ticked alike, a log axis written in values
    titles = {a.title.text: a for a in (panels.xaxis, panels.xaxis2, panels.xaxis3)}
    assert list(titles["batch_size"].ticktext) == ["16", "32", "64"] and list(titles["layers"].tickvals) == [1, 2, 3, 4]
    assert list(titles["lr (log)"].ticktext) == ["0.0001", "0.001", "0.01", "0.1", "1"]
    wide = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    wide.optimize(lambda t: t.suggest_categorical("batch_size", [256, 1024, 4096]) / 4096 + t.suggest_float("x", 0, 1),
                  n_trials=30)  # a decade and more: a log axis, at the choices exactly, written in full
    curve = dependence.compute(wide).rows.query("parameter == 'batch_size' and curve == -1")
    assert np.allclose(curve["x"], np.log10([256, 1024, 4096]))
    assert list(figure(wide, "parallel").data[0].dimensions[0].ticktext) == ["256", "1024", "4096"]


def _plain(storage=None):
    study = optuna.create_study(study_name="plain", storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: (t.suggest_float("lr", 1e-4, 1, log=True) - 0.01) ** 2
                   + (t.suggest_categorical("opt", ["adam", "sgd"]) == "sgd") * 0.1, n_trials=40)
    return study


def test_plot_and_export_draw_a_plain_optuna_study(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'plain.db'}"
    _plain(storage)
    for kind in ("parallel", "dependence"):
        assert main(["plot", "plain", "--kind", kind, "--out", str(tmp_path / f"{kind}.html"),
                     "--storage", storage]) == 0
        assert (tmp_path / f"{kind}.html").stat().st_size > 10_000
        out = tmp_path / f"{kind}.json"
        assert main(["export", "plain", "--figure", kind, "--format", "json", "--out", str(out),
                     "--storage", storage]) == 0
        fields = json.loads(out.read_text())["fields"]
        assert fields["objective"] == "objective (minimize)" and "param_lr" not in fields["axes"]["columns"]


def test_a_plain_study_s_report_draws_both_in_chromium(tmp_path):
    from sensitivity.analysis.report import browser
    from sensitivity.analysis.report.page import write_report

    try:
        browser.chromium()
    except browser.BrowserMissing as reason:
        pytest.skip(str(reason))
    page = write_report(_plain(), tmp_path / "plain.html")
    check = browser.render_check(page)
    assert check["errors"] == [] and {"parallel", "dependence"} <= set(check["kinds"]), check
