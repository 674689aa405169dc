"""Issue 43: any Optuna study, read honestly. Plain Optuna studies written here (not by this tool) of Sobol's
G-function (a = 0, 1, 4.5, 9, 99, 99; analytic S1 0.716, 0.179, 0.024, 0.007) and of Ishigami (S1 0.314, 0.442,
0.000): the sampling family is read, the estimator that fits it gives S1 with 95% intervals that cover the analytic
values, the coverage over repeats is printed in the run's summary (conftest's REPORTED), and bad input is one line.
"""
import math

import numpy as np
import optuna
import pytest
from planted import REPORTED

from sensitivity.analysis.rankings import sampling
from sensitivity.analysis.rankings.given import (TOTAL_NEEDS_DESIGN, GivenData, RbdFastEvaluator, epsilon_squared,
                                                 given_data)
from sensitivity.analysis.rankings.plain import plain_importance, plain_text
from sensitivity.cli import main

optuna.logging.set_verbosity(optuna.logging.WARNING)
G_A = np.array([0, 1, 4.5, 9, 99, 99.0])
G_NAMES = [f"x{i}" for i in range(1, 7)]
_V = 1 / (3 * (1 + G_A) ** 2)
G_S1 = _V / (np.prod(1 + _V) - 1)  # 0.716, 0.179, 0.024, 0.007, 0.0001, 0.0001
ISHIGAMI_S1 = np.array([0.3139, 0.4424, 0.0])


def g_function(x):
    return float(np.prod((np.abs(4 * np.asarray(x) - 2) + G_A) / (1 + G_A)))


def ishigami(x):
    return math.sin(x[0]) + 7 * math.sin(x[1]) ** 2 + 0.1 * x[2] ** 4 * math.sin(x[0])


def g_study(sampler, n: int, storage=None, name="g", direction="minimize"):
    """A plain Optuna study of the G-function, as a user's script writes it."""
    study = optuna.create_study(study_name=name, storage=storage, sampler=sampler, direction=direction)
    study.optimize(lambda t: g_function([t.suggest_float(x, 0, 1) for x in G_NAMES]), n_trials=n)
    return study


def _given(X, Y, names):
    return GivenData(tuple(names), X, Y, (False,) * len(names), len(Y), len(Y))


def coverage(function, truth, low, high, repeats, n=2000, seed=0):
    """(coverage per parameter, mean width per parameter) of RBD-FAST's 95% intervals over `repeats` samples of
    `n` independent uniform draws (what Optuna's random sampler draws) on [low, high]^k."""
    k = len(truth)
    hits, widths = np.zeros(k), np.zeros(k)
    for r in range(repeats):
        rng = np.random.default_rng(seed + r)
        X = rng.random((n, k))
        Y = np.array([function(low + (high - low) * x) for x in X])
        ranking = RbdFastEvaluator(ranking_resamples=2).evaluate(_given(X, Y, [f"x{i + 1}" for i in range(k)]),
                                                                 seed=r)
        lo = np.array([e.low for e in ranking.estimates])
        hi = np.array([e.high for e in ranking.estimates])
        hits += (lo <= truth) & (truth <= hi)
        widths += hi - lo
    return hits / repeats, widths / repeats


def _report(name, repeats, rates, widths, k=4):
    REPORTED.append(f"{name}, RBD-FAST S1 95% intervals over {repeats} repeats of 2,000 random trials: coverage "
                    + ", ".join(f"x{i + 1} {rates[i]:.1%} (mean width {widths[i]:.3f})" for i in range(k)))


def test_g_function_by_the_random_sampler_intervals_cover_the_analytic_s1_and_x1_is_settled_first():
    study = g_study(optuna.samplers.RandomSampler(seed=0), 2000)
    record = plain_importance(study)
    assert record["sampling"]["family"] == "independent" and record["sampling"]["inferred"] is True
    assert record["fits"] == "rbd_fast" and record["total"] == TOTAL_NEEDS_DESIGN
    params = record["parameters"]
    for name, truth in zip(G_NAMES[:4], G_S1[:4]):
        est, low, high = params[name]["rbd_fast"]
        assert low <= truth <= high, f"{name}: {truth:.4f} not in [{low:.4f}, {high:.4f}]"
    group = record["per_group"]["all trials"]
    assert group["settled"] and group["top"] == "x1", group["why"]
    assert group["agreement"]["agree"], group["agreement"]
    assert group["rests_on"] == {"trials": 2000, "configurations": 2000}
    assert set(params["x1"]) == {"rbd_fast", "delta_s1", "fanova", "ped_anova"}
    text = plain_text("g", record)
    assert "sampling: independent (random): inferred" in text and "total indices need a design" in text
    assert "ranking by S1 (RBD-FAST): settled" in text
    REPORTED.append("G-function, 2,000 random trials, RBD-FAST S1: " + ", ".join(
        f"{n} {params[n]['rbd_fast'][0]:.3f} [{params[n]['rbd_fast'][1]:.3f}, {params[n]['rbd_fast'][2]:.3f}] "
        f"(analytic {t:.3f})" for n, t in zip(G_NAMES[:4], G_S1)))


@pytest.mark.parametrize("repeats", [pytest.param(25, id="25"), pytest.param(200, id="200", marks=pytest.mark.slow)])
def test_rbd_fast_intervals_cover_the_g_function_and_ishigami_at_90_percent(repeats):
    rates, widths = coverage(g_function, G_S1, 0.0, 1.0, repeats)
    _report("G-function", repeats, rates, widths)
    assert (rates[:4] >= 0.9).all(), rates
    rates, widths = coverage(ishigami, ISHIGAMI_S1, -math.pi, math.pi, repeats, seed=10_000)
    _report("Ishigami", repeats, rates, widths, k=3)
    assert (rates >= 0.9).all(), rates


def test_a_categorical_parameter_gets_the_between_levels_share_corrected_for_its_bias():
    rng = np.random.default_rng(0)
    codes = rng.integers(3, size=3000).astype(float)
    noise = rng.normal(size=3000)
    assert abs(epsilon_squared(codes, noise)) < 0.005  # no effect: about 0, not (L-1)/n above it
    effect = np.array([0.0, 1.0, 2.0])[codes.astype(int)] + noise  # Var of the means 2/3, of the noise 1
    assert epsilon_squared(codes, effect) == pytest.approx((2 / 3) / (2 / 3 + 1), abs=0.03)


def test_seeds_of_a_configuration_are_averaged_and_the_intervals_resample_configurations():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    rng = np.random.default_rng(1)
    for trial in range(60):
        x = [float(v) for v in rng.random(6)]
        for seed in range(3):  # three seeds a configuration, as a sweep with `seeds: 3` records them
            study.add_trial(optuna.trial.create_trial(
                params=dict(zip(G_NAMES, x)), distributions={n: optuna.distributions.FloatDistribution(0, 1)
                                                             for n in G_NAMES},
                value=g_function(x) + 0.1 * (seed - 1), user_attrs={"config_id": f"c{trial}", "seed": seed}))
    record = plain_importance(study)
    group = record["per_group"]["all trials"]
    assert group["configurations"] == 60 and group["rows"] == 60 and "configuration's trials averaged" in group[
        "repeated"]
    trials = study.get_trials()
    data = given_data(trials, G_NAMES, [t.value for t in trials])
    assert len(data.Y) == 60 and data.trials == 180
    assert data.Y[0] == pytest.approx(g_function([trials[0].params[n] for n in G_NAMES]))  # the seeds' mean


def test_the_sampling_family_is_read_from_the_traces_samplers_leave():
    grid = optuna.create_study(sampler=optuna.samplers.GridSampler({"x": [0.0, 0.5, 1.0], "y": [1, 2]}))
    grid.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("y", 1, 2), n_trials=6)
    found = sampling.sampling_of(grid, grid.get_trials(), ["x", "y"])
    assert found.family == sampling.GRID and not found.inferred and "grid_id" in found.why
    with pytest.warns(optuna.exceptions.ExperimentalWarning):
        qmc = optuna.samplers.QMCSampler(seed=0)
    study = optuna.create_study(sampler=qmc)
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=4)
    assert sampling.sampling_of(study, study.get_trials(), ["x"]).family == sampling.QMC
    cma = optuna.create_study()  # CMA-ES's trace as its sampler writes it (the cmaes package is not installed here)
    cma.add_trial(optuna.trial.create_trial(params={"x": 0.3}, distributions={
        "x": optuna.distributions.FloatDistribution(0, 1)}, value=1.0, system_attrs={"cma:generation": 0}))
    found = sampling.sampling_of(cma, cma.get_trials(), ["x"])
    assert found.family == sampling.MODEL_BASED and found.sampler == "CMA-ES"
    tpe = g_study(optuna.samplers.TPESampler(seed=0, constant_liar=False), 200)  # no trace: inferred
    found = sampling.sampling_of(tpe, tpe.get_trials(), G_NAMES)
    assert found.family == sampling.MODEL_BASED and found.inferred and found.p_value < sampling.INFERENCE_LEVEL


def test_an_rdb_study_is_read_in_bulk_and_gives_optunas_record_traces_included(tmp_path, monkeypatch):
    """On SQLite (as on PostgreSQL) the trials are read by `trial_rows`, not built by Optuna's ORM (10.6 s of
    the command's 24.6 s at 10,000 trials), and give the record Optuna's own trials give, the grid's trace (a
    system attribute of each trial) read from its keys."""
    from sensitivity import private_apis

    space = {x: [0.125, 0.375, 0.625, 0.875] if x in G_NAMES[:3] else [0.5] for x in G_NAMES}
    study = optuna.create_study(study_name="grid", storage=f"sqlite:///{tmp_path / 'g.db'}",
                                sampler=optuna.samplers.GridSampler(space, seed=0))
    study.optimize(lambda t: g_function([t.suggest_float(x, 0, 1) for x in G_NAMES]), n_trials=64)
    with monkeypatch.context() as m:
        m.setattr(private_apis, "rdb_storage", lambda study: None)  # Optuna's trials, as on a journal
        through_optuna = plain_importance(study)
    monkeypatch.setattr(optuna.study.Study, "get_trials", lambda *args, **kw: pytest.fail("read through the ORM"))
    record = plain_importance(study)
    assert record == through_optuna and record["sampling"]["family"] == sampling.GRID
    assert record["n"] == 64 and set(record["parameters"]) == set(G_NAMES[:3])


def test_tpe_output_names_the_family_the_method_and_the_trials_it_rests_on():
    study = g_study(optuna.samplers.TPESampler(seed=0), 200)
    record = plain_importance(study)
    text = plain_text("tpe", record)
    assert record["fits"] == "surrogate" and record["sampling"]["family"] == "model-based"
    assert "sampling: model-based (TPESampler)" in text
    assert "method: S1 of an ExtraTrees surrogate" in text and "points drawn from the prior" in text
    assert "S1 (surrogate on a prior design) rests on 200 trials (200 configurations)" in text
    assert "of the prior design lies near a trial" in text and "total indices need a design" in text
    group = record["per_group"]["all trials"]
    assert not group["settled"] and group["why"].startswith(f"{group['top']} leads, but not testable here")
    assert "ranking by S1 (surrogate on a prior design): not settled: x1 leads, but not testable here" in text
    start = g_study(optuna.samplers.TPESampler(seed=0), 10)
    with pytest.raises(ValueError, match="TPE's 10 start-up trials alone never give an interval"):
        plain_importance(start)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured: x1 covered in 19 of 20, x2 in 13 of 20 (docs/experiments.md, "
                   "'Which estimator follows which sampling'): TPE holds x1 near 0.5, where G is 0 whatever x2 is, "
                   "and the surrogate underestimates x2; strict, so a method that reaches 18 shows here")
def test_over_20_seeded_tpe_studies_the_surrogate_intervals_cover_x1_and_x2_in_18():
    hits = np.zeros(2)
    widths = np.zeros(2)
    for seed in range(20):
        record = plain_importance(g_study(optuna.samplers.TPESampler(seed=seed), 300))
        for j, name in enumerate(G_NAMES[:2]):
            est, low, high = record["parameters"][name]["surrogate"]
            hits[j] += low <= G_S1[j] <= high
            widths[j] += (high - low) / 20
    REPORTED.append(f"G-function by TPE (minimising), 20 seeded studies of 300 trials, surrogate S1 intervals: "
                    f"x1 covered in {int(hits[0])} of 20 (mean width {widths[0]:.3f}), x2 in {int(hits[1])} of 20 "
                    f"(mean width {widths[1]:.3f})")
    assert (hits >= 18).all(), hits


@pytest.fixture()
def journal(tmp_path):
    return f"journal:{tmp_path / 'plain.log'}"


def _cli(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_bad_input_is_one_line_exit_2_and_nothing_written(journal, tmp_path, capsys):
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    storage = JournalStorage(JournalFileBackend(journal.removeprefix("journal:")))
    g_study(optuna.samplers.RandomSampler(seed=0), 20, storage, "few")
    two = optuna.create_study(study_name="two", storage=storage, directions=["minimize", "minimize"])
    two.optimize(lambda t: (t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1)), n_trials=60)
    grouped = optuna.create_study(study_name="grouped", storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    for number in range(60):  # 30 a framework: too few for given-data indices in either
        grouped.enqueue_trial({"framework": ("torch", "mx")[number % 2]})
    grouped.optimize(lambda t: t.suggest_float("x", 0, 1) * len(t.suggest_categorical("framework", ["torch", "mx"])),
                     n_trials=60)
    apart = optuna.create_study(study_name="apart", storage=storage)
    apart.optimize(lambda t: t.suggest_float("a", 0, 1) if t.number % 2 else t.suggest_float("b", 0, 1), n_trials=60)
    before = (tmp_path / "plain.log").read_bytes()
    cases = [(("few",), "sensitivity importance: study few has 20 complete trials; S1 (RBD-FAST) needs at least 50; "
                        "TPE's 10 start-up trials alone never give an interval (fANOVA and PED-ANOVA with intervals "
                        "on fewer: sensitivity report STUDY, its importance section)"),
             (("grouped",), "sensitivity importance: study grouped has 60 complete trials (2 frameworks: mx 30, "
                            "torch 30); S1 (RBD-FAST) needs at least 50 in one framework (fANOVA and PED-ANOVA with "
                            "intervals on fewer: sensitivity report STUDY, its importance section)"),
             (("few", "--params", "x1,lr"), "sensitivity importance: --params lr: not a parameter of study few; "
                                            "allowed: x1, x2, x3, x4, x5, x6"),
             (("apart",), "sensitivity importance: study apart: its 60 complete trials have no parameter in common "
                          "(each index needs a parameter every trial sampled)"),
             (("two",), "sensitivity importance: study two has 2 objectives (values[0], values[1]): give --target NAME")]
    for argv, line in cases:
        code, out, err = _cli(capsys, "importance", *argv, "--storage", journal)
        assert (code, out, err.strip()) == (2, "", line)
    code, out, err = _cli(capsys, "importance", "two", "--target", "values[1]", "--storage", journal)
    assert code == 0 and "objective values[1] (minimize), 60 complete trials" in out, err
    assert (tmp_path / "plain.log").read_bytes() == before  # reading wrote nothing
