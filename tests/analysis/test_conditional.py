"""Indices within each optimizer and the closed index of {optimizer, lr} from a Saltelli design (issue 41, point 5):
exact on a function whose conditional indices are known, the seeds' noise subtracted, and a planted world where lr
matters only relative to the optimizer, under the relative space, settles lr first within each optimizer."""
import numpy as np
import pytest

from sensitivity.analysis.claims.sensitivity import WITHIN, sensitivity_claims
from sensitivity.analysis.rankings.conditional import conditional_record
from sensitivity.config.design import Design, Param, configurations_of

OPTIMIZERS = ("sgd", "momentum", "adam")
BATCHES = (16, 32, 64)
PARAMS = (Param("lr_decades", "float", -1.5, 1.5), Param("optimizer", "categorical", choices=OPTIMIZERS),
          Param("batch_size", "categorical", choices=BATCHES))
SLOPE = {"sgd": 1.0, "momentum": 2.0, "adam": 0.5}
BATCH, JOINT = 0.6, 0.8


def linear(c: dict) -> float:
    """c_o u + d b + e u (b - 1): within optimizer o, Var(u) = 0.75 and Var(b) = 2/3 give every index in closed form."""
    b = BATCHES.index(c["batch_size"])
    return SLOPE[c["optimizer"]] * c["lr_decades"] + BATCH * b + JOINT * c["lr_decades"] * (b - 1)


def analytic(optimizer: str) -> dict:
    c = SLOPE[optimizer]
    variance = c * c * 0.75 + BATCH ** 2 * 2 / 3 + JOINT ** 2 * 0.5
    return {"lr_decades": {"first": c * c * 0.75 / variance, "total": (c * c * 0.75 + JOINT ** 2 * 0.5) / variance},
            "batch_size": {"first": BATCH ** 2 * 2 / 3 / variance,
                           "total": (BATCH ** 2 * 2 / 3 + JOINT ** 2 * 0.5) / variance}}


def test_the_indices_within_each_optimizer_and_the_closed_group_match_their_closed_form():
    design = Design("sobol", 512, 3, PARAMS)
    record = conditional_record(np.array([linear(c) for c in configurations_of(PARAMS, design.rows())]), None, design)
    assert record["given"] == "optimizer" and record["group"] == ["optimizer", "lr_decades"]
    assert not record["noise_subtracted"]
    for optimizer in OPTIMIZERS:
        found = record["levels"][optimizer]["parameters"]
        for name, indices in analytic(optimizer).items():
            for index, value in indices.items():
                est, low, high = found[name][index]
                assert est == pytest.approx(value, abs=0.05), (optimizer, name, index, found)
                assert low <= value <= high, (optimizer, name, index, found)
    # the optimizer alone explains nothing (E[u] = 0), so the group's share is E[c_o^2] 0.75 over the variance
    mean_square = np.mean([c * c for c in SLOPE.values()])
    closed = mean_square * 0.75 / (mean_square * 0.75 + BATCH ** 2 * 2 / 3 + JOINT ** 2 * 0.5)
    assert record["closed"][1] <= closed <= record["closed"][2]
    assert record["closed"][0] == pytest.approx(closed, abs=0.03)
    assert record["levels"]["momentum"]["settled"] and record["levels"]["momentum"]["top"] == "lr_decades"


PEAK = {"sgd": 0.90, "momentum": 0.93, "adam": 0.95}


def relative(c: dict) -> float:
    """Accuracy that depends on lr only through its distance from the optimizer's reference (lr_decades): chance
    (0.1) at the edges, the optimizer's peak at its reference; the batch size moves it by at most 0.06."""
    return (0.1 + (PEAK[c["optimizer"]] - 0.1) * np.exp(-(c["lr_decades"] / 1.2) ** 2)
            - 0.04 * (c["batch_size"] / 32 - 1))


def test_planted_lr_relative_to_the_optimizer_is_settled_first_within_each_optimizer():
    """500 worlds, each a fresh Saltelli design (base 16, 2 seeds a point: the main job's) and fresh seed noise
    (sd 0.02 of accuracy a run)."""
    repeats, first, every, subtracted, raw, clean = 500, dict.fromkeys(OPTIMIZERS, 0), 0, [], [], []
    for r in range(repeats):
        design = Design("sobol", 16, r, PARAMS, seeds=2)
        truth = np.array([relative(c) for c in configurations_of(PARAMS, design.rows())])
        runs = truth[:, None] + 0.02 * np.random.default_rng(r).standard_normal((len(truth), 2))
        record = conditional_record(runs.mean(axis=1), runs.var(axis=1, ddof=1), design, seed=r)
        ok = {o: record["levels"][o]["settled"] and record["levels"][o]["top"] == "lr_decades" for o in OPTIMIZERS}
        for o in OPTIMIZERS:
            first[o] += ok[o]
        every += all(ok.values())
        subtracted.append(record["closed"][0])
        raw.append(conditional_record(runs.mean(axis=1), None, design, seed=r)["closed"][0])
        clean.append(conditional_record(truth, None, design, seed=r)["closed"][0])
    rates = {o: n / repeats for o, n in first.items()}
    print(f"\nlr settled first within each optimizer, {repeats} planted worlds: "
          + ", ".join(f"{o} {rate:.1%}" for o, rate in rates.items())
          + f"; within all three at once {every / repeats:.1%};"
          f" closed index of {{optimizer, lr_decades}}: noiseless {np.mean(clean):.4f}, noise subtracted "
          f"{np.mean(subtracted):.4f}, not subtracted {np.mean(raw):.4f}")
    assert all(rate >= 0.90 for rate in rates.values()), rates
    assert every / repeats >= 0.90
    # the seeds' noise, left in, pulls the closed index down; subtracted, the mean returns to the noiseless one
    assert abs(np.mean(subtracted) - np.mean(clean)) < abs(np.mean(raw) - np.mean(clean))


def _record(design: Design, Y) -> dict:
    within = conditional_record(Y, None, design)
    only = {"why": "this test gives only the indices within an optimizer", "within": within}
    return {"design": design.attrs(), "ranking": {"words": f"Saltelli base N={design.size}", "index": "ST",
                                                  "key": "total", "interactions": True},
            "per_framework": {"torch": only}}


def test_the_claim_names_where_lr_is_settled_and_where_not():
    design = Design("sobol", 512, 3, PARAMS)
    rows = configurations_of(PARAMS, design.rows())
    (claim,) = [c for c in sensitivity_claims("s", _record(design, np.array([relative(c) for c in rows])))
                if c["claim"] == WITHIN]
    assert claim["verdict"] == "settled", claim
    assert claim["headline"].startswith("torch: lr_decades first within every optimizer (sgd, momentum, adam)")
    assert "{optimizer, lr_decades} explain" in claim["headline"] and "pairs that differ only in" in claim["details"]
    # under adam the batch size alone matters: lr is first within sgd and momentum, batch_size within adam

    def mixed(c):
        b = BATCHES.index(c["batch_size"])
        return (0.0 if c["optimizer"] == "adam" else c["lr_decades"]) + (b if c["optimizer"] == "adam" else 0.0)

    (claim,) = [c for c in sensitivity_claims("s", _record(design, np.array([mixed(c) for c in rows])))
                if c["claim"] == WITHIN]
    assert claim["verdict"] == "settled", claim
    assert "lr_decades first within sgd, momentum; batch_size first within adam" in claim["headline"]


def test_a_design_without_an_optimizer_has_no_indices_within_one():
    params = (Param("x1", "float", 0, 1), Param("x2", "float", 0, 1), Param("x3", "float", 0, 1))
    design = Design("sobol", 16, 0, params)
    assert conditional_record(np.arange(design.points, dtype=float), None, design) is None
    morris = Design("morris", 4, 0, PARAMS)
    assert conditional_record(np.arange(morris.points, dtype=float), None, morris) is None
    two = Design("sobol", 1, 0, PARAMS[:2])  # optimizer and lr alone: within an optimizer, nothing to rank
    assert conditional_record(np.arange(two.points, dtype=float), None, two) is None
