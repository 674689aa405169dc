"""The one interval helper: intervals inside the metric's range, the range (not a t interval) for two seeds,
Welch's differences as scipy computes them, Holm's correction and the seeds a comparison needs; and every
analysis that reports an interval gets it from here."""
import math

import numpy as np
import pandas as pd
import pytest
from analysis_data import frame
from scipy import stats

from sensitivity.analysis.intervals import difference, group_intervals, interval_text, mean_interval, ratio
from sensitivity.analysis.statistics import holm, seeds_needed
from sensitivity.analysis.tables.seeds import seed_intervals
from sensitivity.analysis.table import trials_table


def extreme_samples(seed=0, count=400):
    """Small samples that push an interval out of its range: accuracies near 0 or 1 with a wild seed, times
    near 0 with a slow one."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, 7))
        accuracy = np.clip(rng.choice([0.01, 0.5, 0.99]) + rng.normal(0, rng.choice([0.01, 0.3]), n), 0, 1)
        accuracy[rng.random(n) < 0.2] = rng.choice([0.0, 1.0])  # a diverged or a perfect seed
        times = np.abs(rng.lognormal(0, 1.5, n)) * rng.choice([0.01, 100])
        yield accuracy, times


def test_no_accuracy_interval_leaves_0_1_and_no_time_interval_goes_below_0():
    rows = []
    for i, (accuracy, times) in enumerate(extreme_samples()):
        a, t = mean_interval(accuracy, "accuracy"), mean_interval(times, "train_time_s")
        for interval, low, high in ((a, 0.0, 1.0), (t, 0.0, math.inf)):
            if interval.low is not None:
                assert low <= interval.low <= interval.mean <= interval.high <= high, (interval, low, high)
        rows += [{"framework": "torch", "config_id": f"c{i}", "lr": 0.01, "seed": s, "accuracy": x,
                  "train_time_s": y} for s, (x, y) in enumerate(zip(accuracy, times))]
    table = seed_intervals(trials_table(frame(*rows)))  # the seeds table and figure use the same helper
    assert table["accuracy_low"].min() >= 0 and table["accuracy_high"].max() <= 1
    assert table["train_time_s_low"].min() >= 0
    assert (table.loc[table["n_seeds"] == 2, "accuracy_method"] == "range").all()


def test_the_issues_two_seeds_give_their_range_not_minus_4_96_to_6_03():
    interval = mean_interval([0.30, 0.78], "accuracy")  # t at n=2 gave about -2.5 to 3.6 for these
    assert (interval.low, interval.high, interval.method) == (0.30, 0.78, "range")
    assert interval.text() == "0.540 (n=2: range 0.300 to 0.780, no interval)"
    assert mean_interval([0.9]).text() == "0.900 (n=1, no interval)" and mean_interval([]).text() == "-"
    assert interval_text(0.5, 0.4, 0.6, 5) == "0.500 [0.400, 0.600] n=5"


def test_group_intervals_match_the_single_helper():
    rows = pd.DataFrame({"g": [1, 1, 1, 1, 2, 2, 3], "v": [0.9, 0.97, 1.0, 0.95, 0.5, 0.6, 0.7]})
    out = group_intervals(rows, ["g"], "v", "accuracy").set_index("g")
    for group, values in rows.groupby("g")["v"]:
        single = mean_interval(values, "accuracy")
        assert out.loc[group, ["v_mean", "v_n", "v_method"]].tolist() == [pytest.approx(single.mean), single.n,
                                                                          single.method]
        if single.low is not None:
            assert out.loc[group, ["v_low", "v_high"]].tolist() == pytest.approx([single.low, single.high])


def test_accuracy_intervals_keep_95_percent_coverage_near_1():
    """Seeds near 1 pile up against the bound; Student t alone covered 93-94% here, the hull of t and logit-t
    keeps 95% (printed)."""
    rng = np.random.default_rng(5)
    lines = []
    for mean, sd, n in ((0.99, 0.004, 3), (0.995, 0.002, 5), (0.98, 0.01, 10), (0.5, 0.3, 3)):
        concentration = mean * (1 - mean) / sd ** 2 - 1
        p = rng.beta(mean * concentration, (1 - mean) * concentration, (3000, n))
        samples = rng.binomial(1000, p) / 1000
        coverage = np.mean([mean_interval(s, "accuracy").covers(mean) for s in samples])
        lines.append(f"mean {mean}, sd {sd}, {n} seeds: {coverage:.1%}")
        assert 0.93 <= coverage <= 0.97, lines[-1]
    print("\n" + "; ".join(lines))


def test_welch_difference_and_ratio_are_scipys():
    a, b = np.array([0.90, 0.91, 0.93, 0.92]), np.array([0.80, 0.82, 0.81])
    diff, welch = difference(a, b), stats.ttest_ind(a, b, equal_var=False)
    assert diff.p == pytest.approx(welch.pvalue) and (diff.low, diff.high) == pytest.approx(
        tuple(welch.confidence_interval()))
    times = ratio([20.0, 22.0, 21.0], [10.0, 10.5, 11.0])
    logs = stats.ttest_ind(np.log([20, 22, 21]), np.log([10, 10.5, 11]), equal_var=False)
    assert times.estimate == pytest.approx(math.exp(np.log([20, 22, 21]).mean() - np.log([10, 10.5, 11]).mean()))
    assert (times.low, times.high) == pytest.approx(tuple(np.exp(logs.confidence_interval())))
    too_few = difference([0.9, 0.8], [0.7, 0.75, 0.72])  # 2 seeds: no parametric test, the seeds' exact one
    assert too_few.test == "exact permutation" and too_few.low is None and too_few.p == pytest.approx(0.1)
    assert difference([0.9], [0.7]).test == "none"


def test_an_exact_permutation_test_is_scipys_and_bottoms_out_at_its_seeds():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.9, 0.01, 5), rng.normal(0.88, 0.01, 4)
    from sensitivity.analysis.statistics import exact_permutation, min_permutation_p

    ours, floor = exact_permutation([(1, a), (-1, b)])
    assert floor == pytest.approx(min_permutation_p(5, 4))
    theirs = stats.permutation_test((a, b), lambda x, y: abs(x.mean() - y.mean()), permutation_type="independent",
                                    n_resamples=np.inf, alternative="greater").pvalue  # P(|T| >= |t|)
    assert ours == pytest.approx(theirs)
    # every run of one cell diverged to chance: no spread, so no t test, and no p below what 5 and 5 seeds allow
    chance = difference(np.full(5, 0.1), rng.normal(0.95, 0.01, 5))
    assert chance.test == "exact permutation" and chance.p == pytest.approx(2 / 252) == min_permutation_p(5, 5)
    assert chance.p_floor == pytest.approx(2 / 252)


def test_the_test_set_widens_a_contrast_but_adds_no_degree_of_freedom():
    """Per-sample noise large, seeds agreeing: the seeds alone set the df and so bound the p."""
    from sensitivity.analysis.intervals import Arm, contrast

    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(3, 8))
        a = rng.random((n, 1000)) < 0.95
        b = rng.random((n, 1000)) < 0.93
        got = contrast([(1, Arm(a.mean(1), a, "t")), (-1, Arm(b.mean(1), b, "t"))])
        assert got.test == "welch t" and got.df <= 2 * n - 2
        seeds = stats.ttest_ind(a.mean(1), b.mean(1), equal_var=False)
        assert got.p >= seeds.pvalue * (1 - 1e-9)  # never smaller than the seeds' own test allows


def test_holm_adjusts_step_down_and_keeps_untested_entries_empty():
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])


def test_seeds_needed_reaches_80_percent_power():
    n = seeds_needed(0.02, 0.015)
    shift = 0.02 / (0.015 * math.sqrt(2 / n))
    critical = stats.t.ppf(0.975, 2 * n - 2)
    assert stats.nct.sf(critical, 2 * n - 2, shift) >= 0.8
    below = n - 1
    assert stats.nct.sf(stats.t.ppf(0.975, 2 * below - 2), 2 * below - 2,
                        0.02 / (0.015 * math.sqrt(2 / below))) < 0.8
    assert seeds_needed(0.02, 0.015, alpha=0.005) > n  # a stricter Holm level needs more
    assert seeds_needed(0.02, None) is None and seeds_needed(0.001, 1.0) is None


def test_contrast_adds_the_test_sets_error_and_without_correctness_is_welch():
    from sensitivity.analysis.intervals import Arm, contrast

    rng = np.random.default_rng(0)
    hard = rng.random(400) < 0.15  # samples both configurations tend to get wrong
    a = np.vstack([(rng.random(400) < 0.97) & ~hard for _ in range(5)])
    b = np.vstack([(rng.random(400) < 0.90) & ~(hard | (np.arange(400) < 20)) for _ in range(5)])
    with_samples = contrast([(1, Arm(a.mean(1), a, "t")), (-1, Arm(b.mean(1), b, "t"))])
    seeds_only = contrast([(1, Arm(a.mean(1), None, "t")), (-1, Arm(b.mean(1), None, "t"))])
    welch = difference(a.mean(1), b.mean(1))
    assert with_samples.estimate == pytest.approx(welch.estimate) and seeds_only.method == "welch"
    assert (seeds_only.low, seeds_only.high) == pytest.approx((welch.low, welch.high))
    assert with_samples.method == "welch+test-set" and with_samples.test_var > 0
    assert with_samples.high - with_samples.low > seeds_only.high - seeds_only.low  # 20 samples b always misses
    assert contrast([(1, Arm(a.mean(1)[:2], None, "t")), (-1, Arm(b.mean(1), None, "t"))]).low is None


def test_summary_tost_fisher_and_the_sds_upper_bound():
    from scipy import stats

    from sensitivity.analysis.intervals import summary
    from sensitivity.analysis.statistics import divergence, sd_upper, tost

    same = [difference([0.90, 0.91, 0.92, 0.905], [0.90, 0.915, 0.91, 0.90])] * 2
    pooled = summary(same)
    assert pooled.k == 2 and pooled.tau == 0 and pooled.low < pooled.estimate < pooled.high
    apart = summary([difference([0.80, 0.81, 0.82], [0.90, 0.91, 0.92]),
                     difference([0.99, 1.0, 0.98], [0.90, 0.91, 0.92])])
    assert apart.tau > 0.05 and apart.high - apart.low > 0.1  # disagreeing comparisons widen the summary
    assert tost(0.0, 0.005, 0.02) < 0.05 and tost(0.018, 0.005, 0.02) > 0.05 and tost(0.0, None, 0.02) is None
    assert divergence(5, 5, 0, 5) == pytest.approx(stats.fisher_exact([[5, 0], [0, 5]]).pvalue)
    assert divergence(2, 5, 1, 7) == pytest.approx(stats.fisher_exact([[2, 3], [1, 6]]).pvalue)
    assert sd_upper(0.01, 4) == pytest.approx(0.01 * np.sqrt(4 / stats.chi2.ppf(0.2, 4)))
    assert seeds_needed(0.02, sd_upper(0.01, 4)) > seeds_needed(0.02, 0.01)
    assert seeds_needed(0.02, 0.01, test_var=0.0002) is None  # no number of seeds beats this test set's error
