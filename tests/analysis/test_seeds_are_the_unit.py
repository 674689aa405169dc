"""The seed is the unit of replication: every comparison's degrees of freedom come from its seeds (at most
n_a + n_b - 2), the test set's samples never add any, an exact test's p never goes below what its seeds allow,
and a comparison its seeds cannot decide says so ("not testable"), in the planted worlds and, where this
machine has run it, in the main job's studies."""
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from planted import REPORTED, as_frame, crossover_rows, robustness_records, transfer_rows

from sensitivity.analysis.claims.findings import findings
from sensitivity.analysis.claims.judge import decidable, seeds_to_test
from sensitivity.analysis.statistics import ALPHA
from sensitivity.analysis.statistics import min_permutation_p

MAIN_JOB = Path(__file__).resolve().parents[2] / "results" / "optuna.db"


def check_seeds_bound(comparisons: pd.DataFrame) -> int:
    """Assert the bounds on every tested comparison; the number checked."""
    checked = 0
    for row in comparisons.to_dict("records"):
        if row["p"] is None or row["p"] != row["p"]:
            continue
        checked += 1
        assert row["test"] in ("welch t", "paired t", "exact permutation", "exact sign-flip"), row["label"]
        if row["test"].endswith("t"):
            # the seeds' degrees of freedom: n - 1 paired, n_a + n_b - 2 for two arms, and over the four cells of
            # a crossover (fewest seeds n_a and n_b a side) at most 2 (n_a + n_b) - 4
            bound = {"robustness": row["n_a"] - 1, "dataset transfer": 2 * (row["n_a"] + row["n_b"]) - 4}.get(
                row["claim"], row["n_a"] + row["n_b"] - 2)
            if row["claim"] == "dataset transfer" and row["detail"].get("summed") in (False,):
                bound = row["n_a"] + row["n_b"] - 2  # one side: two arms
            assert row["df"] is not None and row["df"] <= min(bound, row["df_max"] or bound) + 1e-9, (
                row["label"], row["df"], bound)
        else:
            assert row["p"] >= row["p_floor"] * (1 - 1e-9), (row["label"], row["p"], row["p_floor"])
    return checked


@pytest.fixture(scope="module")
def world():
    """Both regimes, 5 seeds a cell, each run meeting a test set whose per-sample noise is large (the planted
    worlds' sample difficulties) while the seeds agree; every run of one cell diverges (no spread there)."""
    rng = np.random.default_rng(29)
    rows = transfer_rows(rng, seeds=(5, 5), regimes=("native", "canonical"), study=29,
                         diverged={("tensorflow-default", "torch", "mnist5k"): 5})
    records = robustness_records(rows, study=29)
    rows += crossover_rows(rng, seeds=(5, 5), regimes=("native", "canonical"), study=29)
    return findings(as_frame(rows, "seeds-unit", records))


def test_every_comparison_of_a_planted_world_takes_its_df_from_the_seeds(world):
    checked = check_seeds_bound(world.comparisons)
    assert checked >= 10
    REPORTED.append(f"seeds as the unit: {checked} tested comparisons of a planted world, every df at most "
                    "n_a + n_b - 2 (n - 1 paired), every exact p at or above its seeds' floor")


def test_a_cell_of_no_spread_gets_the_exact_test_never_a_p_below_its_floor(world):
    """Every run of one cell diverged to the same chance accuracy: no variance, so no t test; with 5 seeds
    against 5, p cannot go below 2 / 252 (a t test with the samples' df gave 1e-137)."""
    rows = world.comparisons[world.comparisons["label"].str.contains("tensorflow-default on torch")
                             & world.comparisons["label"].str.startswith("mnist5k")]
    assert len(rows) == 2  # both regimes
    for row in rows.to_dict("records"):
        assert row["test"] == "exact permutation" and row["p"] >= min_permutation_p(5, 5) * (1 - 1e-9)
        assert row["p_floor"] == pytest.approx(2 / 252)


def test_seeds_that_cannot_reach_alpha_say_not_testable_and_how_many_would():
    assert not decidable({"test": "exact sign-flip", "p_floor": 2 / 2 ** 5}, tests=1)  # 0.0625 > 0.05
    assert decidable({"test": "exact sign-flip", "p_floor": 2 / 2 ** 6}, tests=1)
    assert not decidable({"test": "exact permutation", "p_floor": 2 / 252}, tests=9)  # Holm over 9: 0.071
    assert not decidable({"test": "none", "p_floor": None})
    assert seeds_to_test("exact sign-flip", ALPHA) == 6 and seeds_to_test("exact sign-flip", ALPHA / 4) == 8
    assert seeds_to_test("exact permutation", ALPHA / 9) == 6  # 2/924 < 0.0056 < 2/252


@pytest.mark.skipif(not MAIN_JOB.exists() or os.environ.get("CI") == "true",
                    reason="the main job's studies are not on this machine (scripts/main_job.sh writes them)")
def test_the_main_jobs_comparisons_take_their_df_from_the_seeds():
    from sensitivity.studies import catalog

    url = f"sqlite:///{MAIN_JOB}"
    stored = {s["study"] for s in catalog.list_studies(url)}
    names = sorted(s for s in stored if s.startswith("main-sweep-") and not s.endswith("-alone"))
    if not names:
        pytest.skip("no main job in results/optuna.db")
    tag = names[0].removeprefix("main-sweep-")
    kinds = ("transfer", "transfer-steps", "crossover", "placebo", "sweep-alone")  # as scripts/main_job.sh names them
    wanted = [f"main-{kind}-{tag}" if kind != "sweep-alone" else f"main-sweep-{tag}-alone" for kind in kinds]
    others = [catalog.load(name, url) for name in wanted if name in stored]
    found = findings(catalog.load(names[0], url), others)
    checked = check_seeds_bound(found.comparisons)
    REPORTED.append(f"seeds as the unit, main job {tag}: {checked} tested comparisons within their seeds' bounds")
