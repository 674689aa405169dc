"""fANOVA read from the forest's leaves at once (`rankings.fanova`) equals Optuna's FanovaImportanceEvaluator on the
same trials and seed: numeric, log, integer and categorical parameters, a parameter with one value, and a forest
without variance."""
import math
import warnings

import numpy as np
import optuna
import pytest

from sensitivity.analysis.rankings.fanova import fanova_importances
from sensitivity.analysis.rankings.importance import FANOVA_DEPTH, FANOVA_TREES

optuna.logging.set_verbosity(optuna.logging.WARNING)


def objective(trial) -> float:
    x = trial.suggest_float("x", 0, 1)
    lr = trial.suggest_float("lr", 1e-4, 1, log=True)
    batch = trial.suggest_int("batch", 16, 128)
    optimizer = trial.suggest_categorical("optimizer", ["sgd", "adam", "momentum"])
    trial.suggest_float("fixed", 0.5, 0.5)
    return (x ** 2 + math.log10(lr) ** 2 * (0.5 if optimizer == "adam" else 1.0) + batch / 100
            + math.sin(5 * x) * (optimizer == "sgd"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_leaves_give_optunas_importances(seed):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=200)
    params = ["x", "lr", "batch", "optimizer", "fixed"]
    reference = optuna.importance.get_param_importances(
        study, params=params, normalize=False,
        evaluator=optuna.importance.FanovaImportanceEvaluator(n_trees=FANOVA_TREES, max_depth=FANOVA_DEPTH, seed=seed))
    found = fanova_importances(study.get_trials(), params, trees=FANOVA_TREES, depth=FANOVA_DEPTH, seed=seed)
    assert list(found) == list(reference)  # Optuna's order: descending
    assert np.allclose([found[p] for p in params], [reference[p] for p in params], rtol=1e-9, atol=1e-12)
    assert found["fixed"] == 0.0 and found["lr"] > found["x"]


def test_a_forest_without_variance_is_refused_as_optuna_refuses_it():
    study = optuna.create_study()
    study.optimize(lambda t: 1.0 + 0 * t.suggest_float("x", 0, 1), n_trials=5)
    with pytest.raises(RuntimeError, match="zero total variance"):
        fanova_importances(study.get_trials(), ["x"], trees=4, depth=3, seed=0)


def test_categorical_parameters_side_by_side_give_optunas_importances():
    """Two categorical parameters (their one-hot grids next to each other in one pass) and an integer between."""
    def categorical(trial) -> float:
        a = trial.suggest_categorical("a", ["x", "y", "z", "w"])
        n = trial.suggest_int("n", 1, 4)
        b = trial.suggest_categorical("b", [1, 2])
        return {"x": 0.0, "y": 1.0, "z": 3.0, "w": 0.5}[a] * b + 0.2 * n
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    study.optimize(categorical, n_trials=120)
    reference = optuna.importance.get_param_importances(
        study, normalize=False, evaluator=optuna.importance.FanovaImportanceEvaluator(n_trees=8, max_depth=6, seed=3))
    found = fanova_importances(study.get_trials(), ["a", "n", "b"], trees=8, depth=6, seed=3)
    assert list(found) == list(reference)
    assert np.allclose([found[p] for p in reference], list(reference.values()), rtol=1e-9, atol=1e-12)
    assert found["a"] > found["n"]
