#!/usr/bin/env python
"""Time the analysis on a synthetic study of 10,000 trials (target: 10 s in all, image export aside).

The trials are a table shaped like `sensitivity.sweep.studies.trials_frame`'s (curves as JSON text), made
directly rather than through an Optuna storage: five frameworks, lr, batch_size, momentum, weight_decay
and optimizer, 5,000 configurations x 2 seeds, 5-epoch curves, about 1 in 8 trials diverged, 1% failed,
3% pruned, one framework default per framework. Prints one line per step, then the total.

    .venv/bin/python scripts/bench_analysis.py [--trials 10000] [--html]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FRAMEWORKS = {"torch": 1.0, "tensorflow": 1.4, "jax": 0.8, "mxnet": 1.2, "chainer": 1.9}  # relative speed
OPTIMIZERS = ("sgd", "momentum", "adam")
TARGET_S = 10.0


def synthetic_trials(n_trials: int = 10_000, seeds: int = 2, seed: int = 0) -> pd.DataFrame:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, distribution_to_json

    rng = np.random.default_rng(seed)
    n_configs = n_trials // seeds
    frameworks = rng.choice(list(FRAMEWORKS), n_configs)
    lr = 10 ** rng.uniform(-4, 0, n_configs)
    batch = rng.choice([16, 32, 64, 128, 256], n_configs)
    momentum = rng.uniform(0, 0.99, n_configs)
    weight_decay = 10 ** rng.uniform(-6, -2, n_configs)
    optimizer = rng.choice(OPTIMIZERS, n_configs)
    first_of = {fw: int(np.flatnonzero(frameworks == fw)[0]) for fw in FRAMEWORKS}
    lr[list(first_of.values())], momentum[list(first_of.values())] = 0.01, 0.9  # the framework defaults
    effective = np.where(optimizer == "sgd", lr, np.where(optimizer == "momentum", lr / (1 - momentum), lr * 20))
    config = {k: np.repeat(v, seeds) for k, v in dict(
        framework=frameworks, lr=lr, batch_size=batch, momentum=momentum, weight_decay=weight_decay,
        optimizer=optimizer, effective=effective, config=np.arange(n_configs)).items()}
    n = len(config["lr"])
    seed_of = np.tile(np.arange(seeds), n_configs)
    speed = pd.Series(config["framework"]).map(FRAMEWORKS).to_numpy()
    accuracy = np.clip(0.98 - 0.06 * (np.log10(config["effective"]) + 1.5) ** 2 - 20 * config["weight_decay"]
                       + rng.normal(0, 0.01, n), 0.1, 0.995)
    diverged = config["effective"] > 0.5
    accuracy[diverged] = 0.1 + rng.normal(0, 0.005, diverged.sum())
    train_time = speed * 3000 / config["batch_size"] * rng.lognormal(0, 0.15, n)
    state = np.where(rng.random(n) < 0.01, "FAIL", np.where(rng.random(n) < 0.03, "PRUNED", "COMPLETE"))
    status = np.where(state == "FAIL", "failed", np.where(state == "PRUNED", "pruned",
                                                          np.where(diverged, "diverged", "ok")))
    epochs = np.arange(1, 6) / 5
    curves = [json.dumps([{"epoch": e + 1, "train_loss": 2.3 * (1 - f * a), "val_accuracy": a * f,
                           "test_accuracy": a * f, "seconds": t / 5} for e, f in enumerate(epochs)])
              for a, t in zip(accuracy, train_time)]
    failed = state == "FAIL"
    table = pd.DataFrame({
        "number": np.arange(n), "state": state, "value_0": np.where(failed, np.nan, accuracy),
        "value_1": np.where(failed, np.nan, train_time), "param_framework": config["framework"],
        "param_lr": config["lr"], "param_batch_size": config["batch_size"], "param_momentum": config["momentum"],
        "param_weight_decay": config["weight_decay"], "param_optimizer": config["optimizer"], "status": status,
        "seed": seed_of, "config_id": [f"c{c}" for c in config["config"]],
        "accuracy": np.where(failed, np.nan, accuracy), "train_time_s": np.where(failed, np.nan, train_time),
        "throughput": np.where(failed, np.nan, 50_000 / train_time), "peak_rss_mb": 400 + 300 * speed,
        "cpu_percent": 100 + 50 * speed, "framework_version": config["framework"] + "-1.0",
        "curve": np.where(failed, "[]", curves), "is_default": np.isin(config["config"], list(first_of.values()))})
    table.attrs["distributions"] = {name: distribution_to_json(d) for name, d in {
        "framework": CategoricalDistribution(tuple(FRAMEWORKS)), "lr": FloatDistribution(1e-4, 1.0, log=True),
        "batch_size": CategoricalDistribution((16, 32, 64, 128, 256)), "momentum": FloatDistribution(0.0, 0.99),
        "weight_decay": FloatDistribution(1e-6, 1e-2, log=True),
        "optimizer": CategoricalDistribution(OPTIMIZERS)}.items()}
    table.attrs["study"] = "bench"
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--html", action="store_true", help="also time serialising every figure to HTML")
    args = parser.parse_args(argv)

    from sensitivity.analysis import plots
    from sensitivity.analysis.importance import make_evaluator, parameter_importance
    from sensitivity.analysis.table import trials_table

    made = time.perf_counter()
    raw = synthetic_trials(args.trials)
    print(f"synthetic frame: {len(raw)} trials in {time.perf_counter() - made:.2f} s (not counted)")
    started = time.perf_counter()
    make_evaluator("fanova")  # imports scikit-learn, once per process
    print(f"{'import scikit-learn (once per process)':40s} {time.perf_counter() - started:6.2f} s")
    timings = {}

    def timed(name, function, *args, **kwargs):
        begin = time.perf_counter()
        result = function(*args, **kwargs)
        timings[name] = time.perf_counter() - begin
        print(f"{name:40s} {timings[name]:6.2f} s", flush=True)
        return result

    table = timed("trial table (parse curves, outcomes)", trials_table, raw)
    figures = {}
    # transfer and robustness read the trials of defaults and the robustness records, which a sweep of
    # sampled configurations has not: their size grows with frameworks and datasets, not with trials
    for kind in plots.STUDY_KINDS:
        compute, plot = plots.KINDS[kind]
        if kind == "importance":
            data = pd.concat([timed(f"importance: {name}", parameter_importance, table, evaluators=(name,))
                              for name in ("ped_anova", "fanova")], ignore_index=True)
        else:
            data = timed(f"{kind}: compute", compute, table)
        figures[kind] = timed(f"{kind}: figure", plot, data)
    total = sum(timings.values())
    if args.html:
        begin = time.perf_counter()
        size = sum(len(fig.to_html(full_html=False, include_plotlyjs=False)) for fig in figures.values())
        print(f"{'html of every figure (not in the target)':40s} {time.perf_counter() - begin:6.2f} s "
              f"({size / 1e6:.1f} MB without plotly.js)")
    print(f"{'total':40s} {total:6.2f} s  (target {TARGET_S:g} s: {'met' if total <= TARGET_S else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
