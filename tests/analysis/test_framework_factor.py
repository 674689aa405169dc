"""The framework as a factor of a designed study (issue 41, point 5): ST(framework) - S1(framework), less the
seeds' noise, decides "frameworks differ in sensitivity"; a framework uniformly better is no such difference."""
import numpy as np
import pytest

from sensitivity.analysis.claims.sensitivity import DIFFER, sensitivity_claims
from sensitivity.analysis.rankings.framework_factor import MARGIN, framework_factor
from sensitivity.config.design import Design, Param, configurations_of

PARAMS = (Param("x1", "float", -np.pi, np.pi), Param("x2", "float", -np.pi, np.pi), Param("x3", "float", -np.pi, np.pi))


def ishigami(c: dict, a: float = 7.0, b: float = 0.1) -> float:
    return float(np.sin(c["x1"]) + a * np.sin(c["x2"]) ** 2 + b * c["x3"] ** 4 * np.sin(c["x1"]))


def values(design: Design, worlds: dict, noise: float, seed: int = 0) -> dict:
    """{framework: (mean over its seeds by row, 0, 0, the seeds' variance by row)} of planted functions."""
    rng = np.random.default_rng(seed)
    rows = configurations_of(design.params, design.rows())
    out = {}
    for name, f in worlds.items():
        runs = np.array([[f(c) + noise * rng.standard_normal() for _ in range(design.seeds)] for c in rows])
        spread = runs.var(axis=1, ddof=1) if design.seeds > 1 else np.full(len(rows), np.nan)
        out[name] = (runs.mean(axis=1), 0, 0, spread)
    return out


def test_a_framework_uniformly_better_has_s1_but_no_interaction_beyond_noise():
    design = Design("sobol", 64, 0, PARAMS, seeds=2)
    found = framework_factor(values(design, {"a": ishigami, "b": lambda c: ishigami(c) + 3.0}, noise=0.5), design)
    assert found["S1"][0] > 0.1 and found["S1"][1] > 0  # the shift is a main effect of the framework
    # the noise share: (F - 1) / F of a row mean's noise, 0.5^2 / 2 seeds, over the variance of every value
    every = np.r_[values(design, {"a": ishigami}, 0.0)["a"][0], values(design, {"a": ishigami}, 0.0)["a"][0] + 3]
    assert found["noise"] == pytest.approx(0.5 * 0.25 / 2 / every.var(), rel=0.25)
    assert found["beyond_noise"][1] < 0 < found["beyond_noise"][2]
    assert found["beyond_noise"][2] < MARGIN  # no difference in sensitivity
    assert found["interaction"][0] > found["beyond_noise"][0]  # the noise was in ST - S1, and came out


def test_frameworks_sensitive_to_different_factors_differ_beyond_noise():
    design = Design("sobol", 64, 0, PARAMS, seeds=2)
    found = framework_factor(values(design, {"strong": ishigami, "weak": lambda c: ishigami(c, a=1.0)}, noise=0.3),
                             design)
    assert found["beyond_noise"][1] > MARGIN, found


def test_the_claim_reads_the_factor_and_says_one_seed_cannot_separate_noise():
    for seeds, worlds, verdict in ((2, {"strong": ishigami, "weak": lambda c: ishigami(c, a=1.0)}, "supported"),
                                   (2, {"a": ishigami, "b": lambda c: ishigami(c) + 3.0}, "not supported"),
                                   (1, {"strong": ishigami, "weak": lambda c: ishigami(c, a=1.0)}, "not testable")):
        design = Design("sobol", 64, 0, PARAMS, seeds=seeds)
        record = {"design": design.attrs(), "ranking": {"words": "Saltelli base N=64", "index": "ST", "key": "total",
                                                        "interactions": True},
                  "per_framework": {}, "framework_factor": framework_factor(values(design, worlds, 0.3), design)}
        (claim,) = [c for c in sensitivity_claims("s", record) if c["claim"] == DIFFER]
        assert claim["verdict"] == verdict, claim
        assert "ST(framework)" in claim["details"] and "base rows, each with all its frameworks" in claim["details"]
        if seeds == 1:
            assert "--seeds 2" in claim["details"] and "not testable with one seed a point" in claim["headline"]
