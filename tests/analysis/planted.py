"""Synthetic studies with planted effects, no training: the true mean accuracy of every default on every
framework and dataset (TRUE), how much of its clean accuracy each framework keeps under attack (KEEPS), and a
sweep where only lr matters. Each seed's accuracy is drawn around its true mean as training and testing draw
it: a Beta-distributed per-seed accuracy (SEED_SD) then binomial test noise (TEST_SIZE samples); validation
uses the same trained model on VAL_SIZE samples.

Planted, in each regime (canonical scores CANONICAL_OFFSET less everywhere, so every difference is the same):
- dataset transfer: torch's default loses 10 points on digits against the best known there (jax's default run
  on torch); tensorflow's and jax's defaults lose nothing (nulls);
- framework transfer: tensorflow's default loses 6 points moved to torch on mnist5k; moved to jax, nothing (a
  null pair);
- robustness: jax keeps 0.2 less of its clean accuracy than torch and tensorflow at eps 0.1; torch and
  tensorflow do not differ (null); on digits torch's clean accuracy (0.85) is far from tensorflow's (0.93):
  not compared;
- the sweep: lr matters, momentum and batch size do not; jax is the fastest and the least accurate.

`transfer_rows` and `sweep_rows` give trial dicts; `as_frame` a trial table (fast, for many studies),
`as_study` an Optuna study written as the sweep writes one (for the command line).
"""
import warnings

import numpy as np

FRAMEWORKS = ("jax", "tensorflow", "torch")
DEFAULTS = {"torch-default": "torch", "tensorflow-default": "tensorflow", "jax-default": "jax"}
DATASETS = ("mnist5k", "digits")
TRUE = {  # (default, framework, dataset): true mean test accuracy, native
    ("torch-default", "torch", "mnist5k"): 0.97, ("torch-default", "tensorflow", "mnist5k"): 0.96,
    ("torch-default", "jax", "mnist5k"): 0.97,
    ("tensorflow-default", "tensorflow", "mnist5k"): 0.96, ("tensorflow-default", "torch", "mnist5k"): 0.90,
    ("tensorflow-default", "jax", "mnist5k"): 0.96,
    ("jax-default", "jax", "mnist5k"): 0.96, ("jax-default", "torch", "mnist5k"): 0.96,
    ("jax-default", "tensorflow", "mnist5k"): 0.96,
    ("torch-default", "torch", "digits"): 0.85, ("torch-default", "tensorflow", "digits"): 0.93,
    ("torch-default", "jax", "digits"): 0.90,
    ("tensorflow-default", "tensorflow", "digits"): 0.93, ("tensorflow-default", "torch", "digits"): 0.88,
    ("tensorflow-default", "jax", "digits"): 0.94,
    ("jax-default", "jax", "digits"): 0.94, ("jax-default", "torch", "digits"): 0.95,
    ("jax-default", "tensorflow", "digits"): 0.88,
}
EPS = [0.0, 0.1, 0.2, 0.3]
KEEPS = {"torch": [1.0, 0.7, 0.4, 0.15], "tensorflow": [1.0, 0.7, 0.4, 0.15], "jax": [1.0, 0.5, 0.25, 0.1]}
KEEP_SD = 0.03
SEED_SD, TEST_SIZE, VAL_SIZE = 0.01, 1000, 800
CANONICAL_OFFSET = 0.03
SPEED = {"jax": 6.0, "tensorflow": 15.0, "torch": 10.0}
PEAK = {"jax": 0.955, "tensorflow": 0.975, "torch": 0.975}


def true_accuracy(default, framework, dataset, regime="native") -> float:
    return TRUE[(default, framework, dataset)] - (CANONICAL_OFFSET if regime == "canonical" else 0.0)


def draw(rng, mean: float, n: int) -> tuple:
    """(test, validation) accuracies of n seeds whose expected test accuracy is `mean`."""
    concentration = mean * (1 - mean) / SEED_SD ** 2 - 1
    p = rng.beta(mean * concentration, (1 - mean) * concentration, n)
    return rng.binomial(TEST_SIZE, p) / TEST_SIZE, rng.binomial(VAL_SIZE, p) / VAL_SIZE


NULL_TRUE = {key: 0.95 for key in TRUE}  # nothing planted: every default as good everywhere
NULL_KEEPS = {framework: KEEPS["torch"] for framework in FRAMEWORKS}


def transfer_rows(rng, seeds=(3, 6), regimes=("native",), budget_scale=None, truth=None) -> list:
    """Every default on every framework and dataset, a random number of seeds in `seeds` (inclusive) each;
    `truth` replaces TRUE (NULL_TRUE plants nothing)."""
    truth, rows = truth or TRUE, []
    for regime in regimes:
        for (default, framework, dataset) in truth:
            n = int(rng.integers(seeds[0], seeds[1] + 1))
            mean = truth[(default, framework, dataset)] - (CANONICAL_OFFSET if regime == "canonical" else 0.0)
            test, val = draw(rng, mean, n)
            own = DEFAULTS[default] == framework
            for seed in range(n):
                rows.append({"framework": framework, "dataset": dataset, "semantics": regime, "default": default,
                             "default_source": DEFAULTS[default], "source_dataset": "mnist", "own_default": own,
                             "is_default": own, "seed": seed, "accuracy": float(test[seed]),
                             "val_accuracy": float(val[seed]), "budget_scale": budget_scale,
                             "train_time_s": SPEED[framework] * (1 + 0.05 * rng.standard_normal()),
                             "config_id": f"default:{default}:{framework}:{dataset}:{regime}"})
    return rows


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
RESULT = ("seed", "accuracy", "val_accuracy", "train_time_s", "config_id", "default", "default_source",
          "source_dataset", "own_default", "is_default", "budget_scale", "planned")


def as_frame(rows: list, study: str, robustness=None, dataset="mnist5k"):
    """A trial table (`trials_table`) of the rows."""
    import pandas as pd

    from sensitivity.analysis.table import trials_table

    frame = pd.DataFrame([{"number": i, "state": "COMPLETE", "status": "ok", "param_framework": r["framework"],
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
        attrs.update(status="ok", spec={"framework": row["framework"], "semantics": row["semantics"]})
        if row.get("default"):
            attrs["planned"] = {"dataset": row["dataset"], "framework": row["framework"]}
        trials.append(optuna.trial.create_trial(params=params, distributions={k: distributions[k] for k in params},
                                                values=[row["val_accuracy"], row["train_time_s"]], user_attrs=attrs))
    study.add_trials(trials)  # one write per trial: a sweep's many small writes would take minutes in SQLite
    for number, record in (robustness or {}).items():
        study.set_user_attr(f"robustness:{number}", record)
    return study
