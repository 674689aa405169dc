"""Importance on a real Optuna study: accuracy depends on lr, not at all on a dummy parameter."""
import math

import optuna
import pytest
from analysis_data import frame

from sensitivity.analysis.importance import FANOVA_DEPTH, FANOVA_TREES, make_evaluator, parameter_importance
from sensitivity.analysis.table import NotEnoughData, trials_table


def synthetic_study(n_trials=120, crash=False):
    """study.optimize over a formula: accuracy peaks at lr 0.01; `dummy` does nothing; with `crash`, trials
    with crash > 0.7 end at chance (0.1) whatever their lr."""
    def objective(trial):
        trial.suggest_categorical("framework", ["torch", "jax"])
        lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
        trial.suggest_float("dummy", 0.0, 1.0)
        accuracy = 0.97 - 0.1 * (math.log10(lr) + 2) ** 2
        if crash and trial.suggest_float("crash", 0.0, 1.0) > 0.7:
            accuracy = 0.1
        for key, value in {"status": "ok", "accuracy": accuracy, "train_time_s": 1.0, "seed": 0}.items():
            trial.set_user_attr(key, value)
        return accuracy

    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=1))
    study.optimize(objective, n_trials=n_trials)
    return study


@pytest.fixture(scope="module")
def importance():
    return parameter_importance(trials_table(synthetic_study()), seed=0)


@pytest.mark.parametrize("evaluator", ["ped_anova", "fanova"])
def test_lr_ranks_first_for_both_evaluators(importance, evaluator):
    rows = importance[importance["evaluator"] == evaluator].set_index("parameter")
    assert rows["importance"].idxmax() == "lr" and rows.loc["lr", "rank"] == 1
    assert set(rows.index) == {"framework", "lr", "dummy"}  # the framework is a parameter like the others
    assert rows.loc["lr", "importance"] > 5 * rows.loc["dummy", "importance"]
    assert rows["importance"].sum() == pytest.approx(1.0)
    assert (rows["n_trials"] == 120).all()


def test_ped_anova_explains_the_best_trials_not_the_worst():
    # the worst trials are the crashed ones (crash > 0.7); the best are those with lr near 0.01. Given
    # accuracy rather than its negation, PED-ANOVA would rank `crash` first.
    rows = parameter_importance(trials_table(synthetic_study(200, crash=True)), evaluators=("ped_anova",))
    assert rows.set_index("parameter")["importance"].idxmax() == "lr"


def test_fanova_uses_bounded_trees():
    evaluator = make_evaluator("fanova", seed=3)
    assert (FANOVA_TREES, FANOVA_DEPTH) == (16, 8)
    forest = evaluator._evaluator._forest
    assert forest.n_estimators == 16 and forest.max_depth == 8 and forest.random_state == 3


def test_framework_defaults_are_named_beside_their_parameters():
    rows = [{"framework": fw, "lr": lr, "accuracy": acc, "train_time_s": 1.0, "is_default": default}
            for fw, lr, acc, default in [("torch", 0.01, 0.9, True), ("torch", 0.1, 0.5, False),
                                         ("jax", 0.001, 0.7, True), ("jax", 0.3, 0.2, False)]]
    out = parameter_importance(trials_table(frame(*rows)), evaluators=("ped_anova",))
    assert out.set_index("parameter").loc["lr", "defaults"] == "torch 0.01; jax 0.001"


@pytest.mark.parametrize("rows", [
    [{"framework": "torch", "lr": 0.01, "accuracy": 0.9, "train_time_s": 1}],  # one trial
    [{"framework": "torch", "lr": 0.01, "accuracy": a, "train_time_s": 1} for a in (0.8, 0.9)],  # nothing varied
])
def test_importance_needs_two_trials_with_varied_parameters(rows):
    with pytest.raises(NotEnoughData, match="at least 2 complete trials with varied parameters"):
        parameter_importance(trials_table(frame(*rows)))


def test_unknown_evaluator_is_named():
    with pytest.raises(ValueError, match="allowed: ped_anova, fanova"):
        make_evaluator("shap")
