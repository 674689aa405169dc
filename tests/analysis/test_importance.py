"""Importance on a real Optuna study: accuracy depends on lr, not at all on a dummy parameter."""
import math

import optuna
import pandas as pd
import pytest
from analysis_data import FrozenTrialsStudy, frame

from sensitivity.analysis.rankings.importance import (FANOVA_DEPTH, FANOVA_TREES, importance_warnings,
                                                      parameter_importance, planned_trials)
from sensitivity.analysis.tables.parameter_values import parameter_distributions
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


@pytest.fixture(scope="module")
def rows_of(importance):
    return importance.rows


@pytest.mark.parametrize("evaluator", ["ped_anova", "fanova"])
def test_lr_ranks_first_for_both_evaluators(rows_of, evaluator):
    rows = rows_of[rows_of["evaluator"] == evaluator].set_index("parameter")
    assert rows["importance"].idxmax() == "lr" and rows.loc["lr", "rank"] == 1
    assert set(rows.index) == {"framework", "lr", "dummy"}  # the framework is a parameter like the others
    assert rows.loc["lr", "importance"] > 5 * rows.loc["dummy", "importance"]
    assert rows["importance"].sum() == pytest.approx(1.0)
    assert (rows["n_trials"] == 120).all()


def test_ped_anova_explains_the_best_trials_not_the_worst():
    # the worst trials are the crashed ones (crash > 0.7); the best are those with lr near 0.01. Given
    # accuracy rather than its negation, PED-ANOVA would rank `crash` first.
    rows = parameter_importance(trials_table(synthetic_study(200, crash=True)), evaluators=("ped_anova",)).rows
    assert rows.set_index("parameter")["importance"].idxmax() == "lr"


def test_framework_defaults_are_named_beside_their_parameters():
    rows = [{"framework": fw, "lr": lr, "accuracy": acc, "train_time_s": 1.0, "is_default": default}
            for fw, lr, acc, default in [("torch", 0.01, 0.9, True), ("torch", 0.1, 0.5, False),
                                         ("jax", 0.001, 0.7, True), ("jax", 0.3, 0.2, False)]]
    out = parameter_importance(trials_table(frame(*rows)), evaluators=("ped_anova",)).rows
    assert out.set_index("parameter").loc["lr", "defaults"] == "torch 0.01; jax 0.001"


@pytest.mark.parametrize("rows", [
    [{"framework": "torch", "lr": 0.01, "accuracy": 0.9, "train_time_s": 1}],  # one trial
    [{"framework": "torch", "lr": 0.01, "accuracy": a, "train_time_s": 1} for a in (0.8, 0.9)],  # nothing varied
])
def test_importance_needs_two_trials_with_varied_parameters(rows):
    with pytest.raises(NotEnoughData, match="at least 2 complete trials with varied parameters"):
        parameter_importance(trials_table(frame(*rows)))


def test_unknown_evaluator_is_named():
    with pytest.raises(ValueError, match="unknown importance evaluator 'shap'; allowed: ped_anova, fanova"):
        parameter_importance(trials_table(synthetic_study(20)), evaluators=("fanova", "shap"))


# sampled trials only, intervals, agreement and warnings

def test_planned_trials_are_left_out_and_counted():
    study_rows = trials_table(synthetic_study(60))
    planned = study_rows.head(20).assign(is_default=True, accuracy=0.99)  # planned defaults scoring high
    table = trials_table(pd.concat([planned, study_rows.iloc[20:]], ignore_index=True))
    out = parameter_importance(table, evaluators=("ped_anova",), resamples=10)
    assert (out.rows["n_trials"] == 40).all() and out.planned == 20
    listed = planned_trials(table)
    assert listed["accuracy_n"].sum() == 20 and (listed["accuracy_mean"] == 0.99).all()


def test_only_planned_trials_say_so():
    rows = [{"framework": fw, "lr": lr, "accuracy": 0.9, "train_time_s": 1, "is_default": True}
            for fw, lr in (("torch", 0.01), ("jax", 0.1))]
    with pytest.raises(NotEnoughData, match="all planned"):
        parameter_importance(trials_table(frame(*rows)))


@pytest.mark.parametrize("evaluator", ["ped_anova", "fanova"])
def test_each_importance_has_a_bootstrap_interval_around_it(rows_of, evaluator):
    rows = rows_of[rows_of["evaluator"] == evaluator].set_index("parameter")
    assert rows[["low", "high"]].notna().all().all()
    assert ((rows["low"] <= rows["importance"] + 1e-12) & (rows["importance"] <= rows["high"] + 1e-12)).all()
    assert rows.loc["lr", "low"] > rows.loc["dummy", "high"]  # lr matters beyond the intervals



def test_a_subsamples_interval_holds_the_estimate_of_every_trial(monkeypatch):
    """Past BOOTSTRAP_MAX trials each resample is a subsample whose spread is scaled by sqrt(m/n): centred on the
    full sample's estimate, the evaluators' bias at the subsample's size (a parameter that does nothing reads
    higher on fewer trials) shifted fANOVA's intervals off their own estimates, which they must hold."""
    from sensitivity.analysis.rankings import importance as importance_module

    monkeypatch.setattr(importance_module, "BOOTSTRAP_MAX", 60)
    rows = parameter_importance(trials_table(synthetic_study(400)), seed=0).rows.set_index(["evaluator", "parameter"])
    assert (rows["n_trials"] == 400).all()
    inside = (rows["low"] <= rows["importance"] + 1e-12) & (rows["importance"] <= rows["high"] + 1e-12)
    assert inside.all(), rows[~inside]
    assert rows.loc[("fanova", "lr"), "low"] > rows.loc[("fanova", "dummy"), "high"]

def test_fanovas_estimate_is_optunas_and_its_interval_narrows_as_trials_grow():
    """fANOVA's interval is one of the forest's mean importance (a bootstrap of the forest), so it narrows about
    as 1/sqrt(n): 8 times the trials give less than 0.6 of the width. The spread of single trees it replaced
    stays wide however many trials there are."""
    from sensitivity.analysis.rankings.importance import FanovaEvaluator, _negated_accuracy_trials

    widths = {}
    for n in (40, 320):
        rows = trials_table(synthetic_study(n))
        distributions = {name: d for name, d in parameter_distributions(rows).items() if name != "semantics"}
        trials = _negated_accuracy_trials(rows, distributions)
        ranking = FanovaEvaluator().evaluate(trials, list(distributions), seed=0)
        scores = {name: estimate.value for name, estimate in zip(ranking.names, ranking.estimates)}
        spread = {name: (estimate.low, estimate.high) for name, estimate in zip(ranking.names, ranking.estimates)}
        reference = optuna.importance.get_param_importances(FrozenTrialsStudy(trials), params=list(distributions),
                                                            evaluator=optuna.importance.FanovaImportanceEvaluator(
                                                                n_trees=FANOVA_TREES, max_depth=FANOVA_DEPTH, seed=0))
        assert scores == pytest.approx(reference) and set(spread) == set(distributions)
        widths[n] = spread["lr"][1] - spread["lr"][0]
    assert 0 < widths[320] < 0.6 * widths[40], widths


def test_a_ranking_is_settled_where_its_top_leads_the_resamples_beyond_the_second():
    """fANOVA's ranking of a study without a design is settled or not as a design's is (`indices.settled`)."""
    import numpy as np

    from sensitivity.analysis.rankings.importance import block_importance, ranking_verdict

    rows = trials_table(synthetic_study(320))
    _, verdicts = block_importance(rows[rows["semantics"].eq(rows["semantics"].iloc[0])])
    assert verdicts["fanova"]["settled"] and verdicts["fanova"]["top"] == "lr", verdicts
    assert verdicts["fanova"]["lead"] >= 0.9 and verdicts["fanova"]["resamples"] == 20
    half = np.array([[0.6, 0.4]] * 10 + [[0.4, 0.6]] * 10)  # each leads in half the resamples
    tied = ranking_verdict({"a": 0.5, "b": 0.5}, {"a": (0.35, 0.65), "b": (0.35, 0.65)}, half)
    assert not tied["settled"] and "leads in only 50% of resamples (needs 90%)" in tied["why"]
    assert "overlaps" in tied["why"]
    assert not ranking_verdict({"a": 1.0}, {}, half[:0])["settled"]  # no interval: no verdict


def test_rank_agreement_is_printed_per_block(importance):
    agreement = importance.agreement
    assert agreement.iloc[0]["n_parameters"] == 3 and agreement.iloc[0]["spearman"] == pytest.approx(1.0)
    assert agreement.iloc[0]["kendall"] == pytest.approx(1.0)


def test_warnings_name_too_few_trials_and_evaluators_that_disagree():
    def block(evaluator, values):
        return [{"semantics": "native", "evaluator": evaluator, "parameter": p, "importance": v, "low": lo,
                 "high": hi, "rank": i + 1, "n_trials": 38, "defaults": ""} for i, (p, (v, lo, hi)) in
                enumerate(values.items())]
    clash = pd.DataFrame(block("fanova", {"momentum": (0.59, 0.45, 0.7), "lr": (0.3, 0.2, 0.4),
                                          "framework": (0.11, 0.0, 0.2)})
                         + block("ped_anova", {"lr": (0.98, 0.9, 1.0), "momentum": (0.01, 0.0, 0.05),
                                               "framework": (0.01, 0.0, 0.05)}))
    texts = [text for _, text in importance_warnings(clash)]
    assert not any(t.startswith("Only") for t in texts)  # 38 trials for 3 parameters: enough by the rule
    assert any("disagree beyond their intervals: fANOVA ranks momentum above lr, PED-ANOVA lr above momentum" in t
               for t in texts)
    few = clash.assign(n_trials=12)
    assert any(t.startswith("Only 12 sampled trials for 3 parameters") for _, t in importance_warnings(few))
    overlapping = clash.assign(low=0.0, high=1.0)
    texts = [t for _, t in importance_warnings(overlapping)]
    assert any("different parameters first (fANOVA: momentum, PED-ANOVA: lr) within their intervals" in t
               for t in texts)
