"""PED-ANOVA from the trials' cells found once (`rankings.ped_anova`) equals Optuna's PedAnovaImportanceEvaluator
on the same trials, resample by resample: float, log, stepped and integer parameters (log too), categorical ones of
text and numbers, a parameter with one value, conditional parameters (a regime without it), one parameter sampled
from two distributions, ties in the values, infinite values, and resamples that repeat trials or miss a
parameter."""
import math
import warnings

import numpy as np
import optuna
import pytest
from analysis_data import FrozenTrialsStudy

from sensitivity.analysis.rankings import ped_anova
from sensitivity.analysis.rankings.importance import PedAnovaEvaluator

optuna.logging.set_verbosity(optuna.logging.ERROR)
PARAMS = ["x", "lr", "step", "batch", "depth", "optimizer", "width", "fixed", "momentum", "span"]


def objective(trial) -> float:
    x = trial.suggest_float("x", 0, 1)
    lr = trial.suggest_float("lr", 1e-4, 1, log=True)
    step = trial.suggest_float("step", 0, 1, step=0.1)
    batch = trial.suggest_int("batch", 16, 128)
    depth = trial.suggest_int("depth", 1, 1000, log=True)
    optimizer = trial.suggest_categorical("optimizer", ["sgd", "adam", "momentum"])
    width = trial.suggest_categorical("width", [32, 64, 128])
    trial.suggest_float("fixed", 0.5, 0.5)
    value = (x ** 2 + math.log10(lr) ** 2 * (0.5 if optimizer == "adam" else 1.0) + batch / 100 + step
             + math.log(depth) / 10 + width / 1000)
    if optimizer == "momentum":  # conditional: only the momentum optimizer samples it
        value += trial.suggest_float("momentum", 0.0, 0.99) ** 2
    high = 2.0 if trial.number % 3 else 4.0  # one parameter from two distributions (a dynamic space)
    value -= trial.suggest_float("span", 0.0, high) / 10
    if trial.number % 17 == 0:
        return round(value, 1)  # ties among the values
    return float("inf") if trial.number == 5 else value


def reference(trials: list, params: list) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return optuna.importance.get_param_importances(FrozenTrialsStudy(trials), params=params,
                                                       evaluator=optuna.importance.PedAnovaImportanceEvaluator())


@pytest.mark.parametrize("seed", [0, 1])
def test_resamples_give_optunas_importances(seed):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    study.optimize(objective, n_trials=300)
    trials = study.get_trials()
    data = ped_anova.cells(trials, PARAMS)
    rng = np.random.default_rng(seed)
    indices = [np.arange(len(trials)), *(rng.choice(len(trials), size=n) for n in (300, 120, 40, 12))]
    for index in indices:
        expected = reference([trials[i] for i in index], PARAMS)
        found = ped_anova.importances(data, index)
        assert list(found) == list(expected)  # Optuna's order: descending
        assert np.allclose([found[p] for p in PARAMS], [expected[p] for p in PARAMS], rtol=1e-9, atol=1e-12)
    assert found["fixed"] == 0.0


def test_a_resample_without_a_parameter_or_with_one_trial_is_treated_as_optuna_treats_it():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(objective, n_trials=40)
    trials = study.get_trials()
    data = ped_anova.cells(trials, PARAMS)
    without = np.array([i for i, t in enumerate(trials) if "momentum" not in t.params][:10])
    with pytest.raises(ValueError, match="Missing parameters: \\['momentum'\\]"):
        reference([trials[i] for i in without], PARAMS)
    with pytest.raises(ValueError, match="Missing parameters: \\['momentum'\\]"):
        ped_anova.importances(data, without)
    with_momentum = next(i for i, t in enumerate(trials) if "momentum" in t.params)
    single = np.array([with_momentum, 5])  # the other trial's value is infinite: one trial left
    assert ped_anova.importances(data, single) == reference([trials[i] for i in single], PARAMS)


def test_the_evaluator_ranks_with_intervals_from_the_cells():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    study.optimize(objective, n_trials=200)
    trials = [t for t in study.get_trials() if math.isfinite(t.value)]
    ranking = PedAnovaEvaluator(resamples=20).evaluate(trials, PARAMS, seed=0)
    expected = reference(trials, PARAMS)
    assert ranking.names == tuple(expected)
    assert np.allclose([e.value for e in ranking.estimates], list(expected.values()), rtol=1e-9, atol=1e-12)
    assert ranking.replicates.shape == (20, len(PARAMS))
    assert all(e.low <= e.value <= e.high for e in ranking.estimates if e.value > 0.01)
