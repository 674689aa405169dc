"""Synthetic studies with planted effects, no training: the true (population) accuracy of every default on
every framework and dataset (TRUE), of the crossovers' configurations (CROSSOVER), how much of its clean
accuracy each framework keeps under attack (KEEPS), and a sweep where only lr matters.

Each run is drawn sample by sample, as a trained model meets a test set: every study draws its own test set
(sample difficulties z), every configuration its own per-sample interaction e (what it gets right that another
does not), every seed its own shift u; a sample is right with probability Phi(theta + u - LAMBDA z + e), theta
set so that the population accuracy is the planted one. So a run's accuracy on the study's test set differs
from the planted value by the seed and by the test set, and an interval must count both to cover it. Each
(study, configuration, dataset, seed) draws from its own generator: the same seed of the same configuration is
the same run wherever it appears (a sweep's winner run again on its seed would be the lucky run again).

Planted, in each regime (canonical scores CANONICAL_OFFSET less everywhere, so every difference is the same):
- framework transfer: tensorflow's default loses 10 points moved to torch on mnist5k; moved to jax, nothing (a
  null pair); every other pair is null;
- dataset transfer: on torch, the configuration tuned for mnist5k ("default torch-default") and the one tuned
  for digits (the best of a sweep there): a home advantage of 0.11; the placebo (digits-a x digits-b) none;
- robustness: jax keeps 0.2 less of its clean accuracy than torch and tensorflow at eps 0.1; torch and
  tensorflow do not differ (null); on digits torch's clean accuracy (0.85) is far from tensorflow's (0.93):
  not compared;
- the sweep: lr matters, momentum and batch size do not; jax is the fastest and the least accurate.

`transfer_rows`, `crossover_rows` and `sweep_rows` give trial dicts; `as_frame` a trial table (fast, for many
studies), `as_study` an Optuna study written as the sweep writes one (for the command line).
"""
import warnings
import zlib

import numpy as np
from scipy.special import ndtr, ndtri

from sensitivity.correctness import pack
from sensitivity.sweep.crossover import FIRST_SEED

REPORTED = []  # lines the tests measured, for the test run's summary (conftest.py)
FRAMEWORKS = ("jax", "tensorflow", "torch")
DEFAULTS = {"torch-default": "torch", "tensorflow-default": "tensorflow", "jax-default": "jax"}
DATASETS = ("mnist5k", "digits")
TRUE = {  # (default, framework, dataset): true mean test accuracy, native
    ("torch-default", "torch", "mnist5k"): 0.97, ("torch-default", "tensorflow", "mnist5k"): 0.97,
    ("torch-default", "jax", "mnist5k"): 0.97,
    ("tensorflow-default", "tensorflow", "mnist5k"): 0.96, ("tensorflow-default", "torch", "mnist5k"): 0.86,
    ("tensorflow-default", "jax", "mnist5k"): 0.96,
    ("jax-default", "jax", "mnist5k"): 0.96, ("jax-default", "torch", "mnist5k"): 0.96,
    ("jax-default", "tensorflow", "mnist5k"): 0.96,
    ("torch-default", "torch", "digits"): 0.85, ("torch-default", "tensorflow", "digits"): 0.85,
    ("torch-default", "jax", "digits"): 0.85,
    ("tensorflow-default", "tensorflow", "digits"): 0.93, ("tensorflow-default", "torch", "digits"): 0.93,
    ("tensorflow-default", "jax", "digits"): 0.93,
    ("jax-default", "jax", "digits"): 0.94, ("jax-default", "torch", "digits"): 0.94,
    ("jax-default", "tensorflow", "digits"): 0.94,
}
# (tuned for, run on): true accuracy of torch's crossover configurations; home advantage (0.97 - 0.93) +
# (0.95 - 0.88) = 0.11; the placebo's halves: none
CROSSOVER = {("mnist5k", "mnist5k"): 0.97, ("digits", "mnist5k"): 0.93, ("digits", "digits"): 0.95,
             ("mnist5k", "digits"): 0.88}
PLACEBO = {("digits-a", "digits-a"): 0.94, ("digits-b", "digits-a"): 0.94, ("digits-b", "digits-b"): 0.94,
           ("digits-a", "digits-b"): 0.94}
EPS = [0.0, 0.1, 0.2, 0.3]
KEEPS = {"torch": [1.0, 0.7, 0.4, 0.15], "tensorflow": [1.0, 0.7, 0.4, 0.15], "jax": [1.0, 0.5, 0.25, 0.1]}
KEEP_SD = 0.03
SEED_SD = 0.01  # of the sweep's draws (no per-sample model)
LAMBDA, TAU, SHIFT = 1.2, 0.6, 0.12  # sample difficulty, configuration x sample interaction, seed shift
TEST_SIZE = {"mnist5k": 1000, "digits": 360, "digits-a": 179, "digits-b": 180}
VAL_SIZE = 800
CANONICAL_OFFSET = 0.03
SPEED = {"jax": 6.0, "tensorflow": 15.0, "torch": 10.0}
PEAK = {"jax": 0.955, "tensorflow": 0.975, "torch": 0.975}


def true_accuracy(default, framework, dataset, regime="native") -> float:
    return TRUE[(default, framework, dataset)] - (CANONICAL_OFFSET if regime == "canonical" else 0.0)


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(str(part).encode()) for part in key])


class World:
    """One study's test and validation sets: the difficulty of each sample, drawn from the population."""

    def __init__(self, study: int):
        self.study = study
        self.sets = {}

    def samples(self, dataset: str, split: str) -> np.ndarray:
        key = (dataset, split)
        if key not in self.sets:
            size = TEST_SIZE[dataset] if split == "test" else VAL_SIZE
            self.sets[key] = _rng(self.study, "set", dataset, split).standard_normal(size)
        return self.sets[key]

    def run(self, config: str, dataset: str, seed: int, accuracy: float) -> dict:
        """One trained model of `config` (whose population accuracy on `dataset` is `accuracy`) at `seed`."""
        theta = ndtri(accuracy) * np.sqrt(1 + SHIFT ** 2 + LAMBDA ** 2 + TAU ** 2)
        shift = _rng(self.study, "seed", config, dataset, seed).normal(0, SHIFT)
        out = {}
        for split in ("test", "val"):
            z = self.samples(dataset, split)
            interaction = _rng(self.study, "config", config, dataset, split).normal(0, TAU, len(z))
            draw = _rng(self.study, "draw", config, dataset, seed, split).random(len(z))
            out[split] = draw < ndtr(theta + shift - LAMBDA * z + interaction)
        return {"accuracy": float(out["test"].mean()), "val_accuracy": float(out["val"].mean()),
                "test_correct": pack(out["test"])}


def draw(rng, mean: float, n: int) -> tuple:
    """(test, validation) accuracies of n seeds whose expected test accuracy is `mean` (the sweep's draws)."""
    concentration = mean * (1 - mean) / SEED_SD ** 2 - 1
    p = rng.beta(mean * concentration, (1 - mean) * concentration, n)
    return rng.binomial(1000, p) / 1000, rng.binomial(VAL_SIZE, p) / VAL_SIZE


NULL_TRUE = {key: 0.95 for key in TRUE}  # nothing planted: every default as good everywhere
NULL_CROSSOVER = {key: 0.95 for key in CROSSOVER}
NULL_KEEPS = {framework: KEEPS["torch"] for framework in FRAMEWORKS}


def transfer_rows(rng, seeds=(3, 6), regimes=("native",), budget_scale=1.0, truth=None, study=0,
                  diverged=None) -> list:
    """Every default on every framework and dataset, a random number of seeds in `seeds` (inclusive) each;
    `truth` replaces TRUE (NULL_TRUE plants nothing); `diverged` {(default, framework, dataset): k}: that
    many of the cell's runs diverge (chance accuracy, no correctness kept)."""
    truth, rows, world = truth or TRUE, [], World(study)
    for regime in regimes:
        for (default, framework, dataset) in truth:
            n = int(rng.integers(seeds[0], seeds[1] + 1))
            mean = truth[(default, framework, dataset)] - (CANONICAL_OFFSET if regime == "canonical" else 0.0)
            lost = (diverged or {}).get((default, framework, dataset), 0)
            own = DEFAULTS[default] == framework
            for seed in range(n):
                run = world.run(f"{default}/{framework}/{regime}", dataset, seed, mean)
                if seed < lost:
                    run = {"accuracy": 0.1, "val_accuracy": 0.1, "test_correct": None, "status": "diverged"}
                rows.append({"framework": framework, "dataset": dataset, "semantics": regime, "default": default,
                             "default_source": DEFAULTS[default], "source_dataset": "mnist", "own_default": own,
                             "is_default": own, "seed": seed, "status": "ok", **run, "budget_scale": budget_scale,
                             "train_time_s": SPEED[framework] * (1 + 0.05 * rng.standard_normal()),
                             "config_id": f"default:{default}:{framework}:{dataset}:{regime}"})
    return rows


def crossover_rows(rng, seeds=(3, 6), regimes=("native",), truth=None, placebo=None, budget_scale=1.0, study=0,
                   sweep_size=0) -> list:
    """torch's crossover of mnist5k and digits (`truth`, default CROSSOVER) and, unless `placebo` is False, the
    placebo of digits' halves (PLACEBO), each cell a random number of seeds in `seeds` from the crossover's
    FIRST_SEED. With `sweep_size`, the digits side is the best on validation of that many configurations of a
    sweep run on seed 0, all as good as CROSSOVER says: the crossover runs the winner again on its own seeds
    (were they the sweep's, its lucky run would come back)."""
    world, rows = World(study), []
    plans = [("mnist5k", "digits", truth or CROSSOVER, False)] + ([] if placebo is False else
                                                                  [("digits-a", "digits-b", PLACEBO, True)])
    for regime in regimes:
        offset = CANONICAL_OFFSET if regime == "canonical" else 0.0
        for a, b, cells, is_placebo in plans:
            name = f"torch/{regime}: {a} x {b}"
            keys = {a: f"{name}/tuned for {a}", b: f"{name}/tuned for {b}"}
            labels = {a: "best of sweep-" + a if is_placebo else "default torch-default", b: f"best of sweep-{b}"}
            if sweep_size and not is_placebo:  # the sweep's configurations, each run once on seed 0
                scores = {f"sweep-{b}:c{k}/{regime}": world.run(f"sweep-{b}:c{k}/{regime}", b, 0,
                                                                cells[(b, b)] - offset)["val_accuracy"]
                          for k in range(sweep_size)}
                keys[b] = labels[b] = max(scores, key=scores.get)
            for tuned in (a, b):
                for on in (a, b):
                    n = int(rng.integers(seeds[0], seeds[1] + 1))
                    for seed in range(FIRST_SEED, FIRST_SEED + n):
                        run = world.run(keys[tuned], on, seed, cells[(tuned, on)] - offset)
                        rows.append({"framework": "torch", "dataset": on, "semantics": regime, "seed": seed,
                                     "status": "ok", **run, "crossover": name, "placebo": is_placebo,
                                     "tuned_for": tuned, "tuned_config": labels[tuned], "tuned_key": keys[tuned],
                                     "budget_scale": budget_scale, "train_time_s": SPEED["torch"] * (
                                         1.2 if tuned == on else 1.0) * float(rng.lognormal(0, 0.05)),
                                     "config_id": f"crossover:{name}:{tuned}:{on}"})
    return rows


def true_home_advantage(truth=None) -> float:
    cells = truth or CROSSOVER
    return (cells[("mnist5k", "mnist5k")] - cells[("digits", "mnist5k")] + cells[("digits", "digits")]
            - cells[("mnist5k", "digits")])


def robustness_records(rng, rows: list, keeps=None) -> dict:
    """{trial number: record} for each framework's own default models (all seeds), white-box FGSM; `keeps`
    replaces KEEPS (NULL_KEEPS plants nothing)."""
    keeps_of, records = keeps or KEEPS, {}
    for number, row in enumerate(rows):
        if not row["own_default"]:
            continue
        keeps = np.clip(np.asarray(keeps_of[row["framework"]]) + KEEP_SD * rng.standard_normal(len(EPS)), 0, 1)
        keeps[0] = 1.0
        clean = row["accuracy"]
        records[number] = {"samples": 300, "clean": clean, "eps": EPS, "attacks": ["fgsm"],
                           "white_box": {"fgsm": [float(clean * k) for k in keeps]}, "transfer": {}}
    return records


def sweep_rows(rng, configs=45, seeds=2, regimes=("native",), defaults=True, peaks=None) -> list:
    """A sweep on mnist5k: sampled lr (matters), momentum and batch size (do not); the defaults first.
    `peaks` replaces PEAK, each framework's accuracy at the best lr."""
    peaks, rows = peaks or PEAK, []
    for regime in regimes:
        offset = CANONICAL_OFFSET if regime == "canonical" else 0.0
        if defaults:
            for default, framework in DEFAULTS.items():
                test, val = draw(rng, true_accuracy(default, framework, "mnist5k", regime), seeds)
                rows += [{"framework": framework, "dataset": "mnist5k", "semantics": regime, "default": default,
                          "default_source": framework, "source_dataset": "mnist", "own_default": True,
                          "is_default": True, "planned": True, "seed": s, "accuracy": float(test[s]),
                          "val_accuracy": float(val[s]), "train_time_s": SPEED[framework], "lr": None,
                          "momentum": None, "batch_size": 64, "config_id": f"default:{default}:{regime}"}
                         for s in range(seeds)]
        for index in range(configs):
            framework = FRAMEWORKS[index % 3]
            lr, momentum = float(10 ** rng.uniform(-3, np.log10(0.3))), float(rng.uniform(0, 0.95))
            batch = int(rng.choice([32, 64, 128]))
            mean = peaks[framework] - 0.08 * (np.log10(lr) + 2) ** 2 - offset
            test, val = draw(rng, max(0.11, mean), seeds)
            rows += [{"framework": framework, "dataset": "mnist5k", "semantics": regime, "seed": s,
                      "accuracy": float(test[s]), "val_accuracy": float(val[s]), "lr": lr, "momentum": momentum,
                      "batch_size": batch, "config_id": f"c{index}:{regime}",
                      "train_time_s": SPEED[framework] * 64 / batch * float(rng.lognormal(0, 0.05))}
                     for s in range(seeds)]
    return rows


PARAMS = ("lr", "momentum", "batch_size")
RESULT = ("seed", "status", "accuracy", "val_accuracy", "train_time_s", "config_id", "default", "default_source",
          "source_dataset", "own_default", "is_default", "budget_scale", "planned", "test_correct", "crossover",
          "placebo", "tuned_for", "tuned_config", "tuned_key")


def as_frame(rows: list, study: str, robustness=None, dataset="mnist5k"):
    """A trial table (`trials_table`) of the rows."""
    import pandas as pd

    from sensitivity.analysis.table import trials_table

    frame = pd.DataFrame([{"number": i, "state": "COMPLETE", "param_framework": r["framework"],
                           **{f"param_{p}": r[p] for p in PARAMS if p in r}, "curve": "[]",
                           **{k: r.get(k) for k in (*RESULT, "dataset", "semantics")}} for i, r in enumerate(rows)])
    frame.attrs.update(study=study, dataset=dataset, robustness=robustness or {})
    return trials_table(frame)


def as_study(rows: list, name: str, storage, robustness=None, dataset="mnist5k"):
    """An Optuna study of the rows, written as the sweep writes one: parameters (planned trials carry theirs
    in `planned`), results as user attributes, the regime in `spec`, robustness records as study attributes."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    distributions = {"framework": CategoricalDistribution(FRAMEWORKS), "lr": FloatDistribution(1e-3, 0.3, log=True),
                     "momentum": FloatDistribution(0.0, 0.95), "batch_size": CategoricalDistribution((32, 64, 128))}
    study = optuna.create_study(study_name=name, storage=storage, directions=["maximize", "minimize"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(["val_accuracy", "train_time_s"])
    study.set_user_attr("space", {"dataset": dataset})
    trials = []
    for row in rows:
        params = {k: row[k] for k in ("framework", *PARAMS) if row.get(k) is not None}
        attrs = {k: row[k] for k in RESULT if row.get(k) is not None}
        attrs.update(status=row.get("status", "ok"), spec={"framework": row["framework"],
                                                           "semantics": row["semantics"]})
        if row.get("default") or row.get("crossover"):
            attrs["planned"] = {"dataset": row["dataset"], "framework": row["framework"]}
        trials.append(optuna.trial.create_trial(params=params, distributions={k: distributions[k] for k in params},
                                                values=[row["val_accuracy"], row["train_time_s"]], user_attrs=attrs))
    study.add_trials(trials)  # one write per trial: a sweep's many small writes would take minutes in SQLite
    for number, record in (robustness or {}).items():
        study.set_user_attr(f"robustness:{number}", record)
    return study
