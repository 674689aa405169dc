"""Synthetic studies for measuring at scale: trials shaped as a sweep's driver stores them, written fast.

`write_study` makes a study through Optuna (directions, metric names, the space and its fingerprint, a
driver's heartbeat), then adds `n` finished trials straight into Optuna's RDB tables (SQLite or
PostgreSQL) with bulk inserts: parameters with their distributions, the value, one intermediate value per
epoch, and the user attributes the searcher records (`spec`, `seed`, `config_id`, `driver`, every
TrialResult field including the per-epoch `curve`, the `env` record and a `stderr_tail`). Plain Optuna and
optuna-dashboard read the result like any study. Ten trials are the framework defaults (planned, two
seeds each); the rest are sampled configurations with two seeds. About 12% diverge (chance accuracy,
non-finite loss), 1% fail with a traceback in their stderr tail and 2% are pruned.

    .venv/bin/python -m benchmarks.synthetic STUDY --trials 100000 --storage URL
"""
from __future__ import annotations

import datetime as dt
import json
import sys
import warnings

import numpy as np

from sensitivity import private_apis

FRAMEWORKS = {"torch": ("2.13.0+cpu", 1.0), "tensorflow": ("2.21.0", 1.4), "jax": ("0.10.2 (flax 0.12.8, cpu)", 0.8),
              "mxnet": ("1.9.1", 1.2), "chainer": ("7.8.1", 1.9)}  # version, relative time per epoch
EPOCHS = 10
SEEDS = 2
CHUNK = 5_000
SPACE = {"study": "synthetic", "dataset": "mnist", "model": "lenet5", "frameworks": list(FRAMEWORKS),
         "parameters": {"lr": {"type": "float", "low": 1e-4, "high": 0.3, "log": True},
                        "batch_size": {"type": "categorical", "choices": [32, 64, 128, 256]},
                        "momentum": {"type": "float", "low": 0.0, "high": 0.95},
                        "weight_decay": {"type": "float", "low": 1e-5, "high": 0.01, "log": True},
                        "lr_policy": {"type": "categorical", "choices": ["fixed", "inv", "cosine"]}},
         "fixed": {"epochs": EPOCHS, "optimizer": "momentum", "gamma": 0.0001, "power": 0.75},
         "objectives": [{"metric": "val_accuracy", "direction": "maximize"}], "val_fraction": 0.1,
         "seeds": SEEDS}
TF_WARNING = ("WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
              "I0000 00:00:1733000000.000000 1234 cpu_feature_guard.cc:210] This TensorFlow binary is optimized "
              "to use available CPU instructions in performance-critical operations.\nTo enable the following "
              "instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with the appropriate "
              "compiler flags.\n")
TRACEBACK = ("Traceback (most recent call last):\n" + "".join(
    f'  File "/work/main/sensitivity/trial/worker.py", line {100 + i}, in run\n    result = adapter.train(spec, '
    f'reporter)\n' for i in range(12)) + "RuntimeError: DefaultCPUAllocator: can't allocate memory\n")


def write_study(storage_url: str, name: str, n: int, seed: int = 0) -> int:
    """Add `n` synthetic finished trials to study `name` (made if missing) of an RDB storage (SQLite or
    PostgreSQL); returns the study's trial count."""
    import optuna

    from sensitivity.config.spaces import Space
    from sensitivity.studies.records import SPACE_HASH, beat
    from sensitivity.studies.storage import open_storage

    storage = open_storage(storage_url)
    space = Space.model_validate({**SPACE, "study": name})
    study = optuna.create_study(study_name=name, storage=storage, direction="maximize", load_if_exists=True)
    if SPACE_HASH not in study.user_attrs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(["val_accuracy"])
        study.set_user_attr(SPACE_HASH, space.fingerprint())
        study.set_user_attr("space", space.model_dump(mode="json"))
        beat(study, "synthetic0000")
    engine = private_apis.rdb_storage(storage).engine
    distributions = {k: optuna.distributions.distribution_to_json(d)
                     for k, d in space.distributions().items()}
    internal = space.distributions()
    first = _count(engine, private_apis.study_id(study))  # Optuna's get_n_trials reads every trial
    rng = np.random.default_rng([seed, first])
    for done in range(0, n, CHUNK):
        trials = _trials(rng, first + done, min(CHUNK, n - done))
        _insert(engine, private_apis.study_id(study), trials, distributions, internal)
    return _count(engine, private_apis.study_id(study))


def _trials(rng, first: int, size: int) -> list:
    """`size` trials numbered from `first`: dicts of state, times, params, value, intermediate values, attrs."""
    out = []
    base = dt.datetime(2026, 1, 1) + dt.timedelta(seconds=60 * first)
    config = None
    for number in range(first, first + size):
        seed = number % SEEDS
        if seed == 0 or config is None:
            config = _configuration(rng, number)
        framework = config["params"]["framework"]
        version, slowness = FRAMEWORKS[framework]
        effective = config["params"]["lr"] / (1 - config["params"]["momentum"])
        diverged = effective > 0.6
        accuracy = float(np.clip(0.99 - 0.05 * (np.log10(effective) + 1.2) ** 2
                                 - 8 * config["params"]["weight_decay"] + rng.normal(0, 0.004), 0.1, 0.995))
        roll = rng.random()
        state = "FAIL" if roll < 0.01 else "PRUNED" if roll < 0.03 else "COMPLETE"
        epochs = EPOCHS if state == "COMPLETE" else int(rng.integers(1, EPOCHS))
        seconds = slowness * 6000 / config["params"]["batch_size"] * float(rng.lognormal(0, 0.1))
        curve = [{"epoch": e, "train_loss": None if diverged else 2.3 * (1 - accuracy * e / EPOCHS) + 0.05,
                  "val_accuracy": 0.1 if diverged else accuracy * (0.9 + 0.1 * e / EPOCHS),
                  "test_accuracy": 0.1 if diverged else accuracy * (0.9 + 0.1 * e / EPOCHS) - 0.003,
                  "seconds": seconds} for e in range(1, epochs + 1)]
        status = ("failed" if state == "FAIL" else "pruned" if state == "PRUNED" else
                  "diverged" if diverged else "ok")
        value = 0.1 if diverged else curve[-1]["val_accuracy"]  # pruned: its last epoch's
        spec = {**config["spec"], "seed": seed}
        attrs = {"driver": "synthetic0000", "config_id": config["config_id"], "seed": seed, "spec": spec,
                 **config["planned"],
                 "status": status, "reason": ("RuntimeError: DefaultCPUAllocator: can't allocate memory"
                                              if state == "FAIL" else "loss became non-finite" if diverged else ""),
                 "accuracy": None if state == "FAIL" else value - 0.003, "val_accuracy": None if state == "FAIL"
                 else value, "loss": None if diverged or state == "FAIL" else curve[-1]["train_loss"],
                 "curve": curve if state != "FAIL" else [], "setup_time_s": 4.5 * slowness,
                 "compile_time_s": 0.0 if framework != "jax" else 7.9, "train_time_s": seconds * epochs,
                 "test_time_s": 0.5, "wall_time_s": seconds * epochs + 6.0,
                 "throughput": 54000 * epochs / (seconds * epochs), "peak_rss_mb": 400 + 300 * slowness,
                 "cpu_percent": 95.0, "gpu": None, "flops_per_s": 1.3e10 / slowness, "params": 431080,
                 "steps": 844 * epochs, "stderr_tail": TRACEBACK if state == "FAIL" else
                 TF_WARNING if framework == "tensorflow" else "",
                 "env": _env(framework, version, seed, number)}
        start = base + dt.timedelta(seconds=60 * (number - first))
        out.append({"number": number, "state": state, "start": start,
                    "complete": start + dt.timedelta(seconds=attrs["wall_time_s"]),
                    "params": config["params"], "value": None if state == "FAIL" else value,
                    "intermediate": [] if state == "FAIL" else [c["val_accuracy"] for c in curve], "attrs": attrs})
    return out


def _configuration(rng, number: int) -> dict:
    """A sampled configuration, or for the first ten trials a framework default (planned, two seeds)."""
    names = list(FRAMEWORKS)
    if number < SEEDS * len(names):
        framework = names[number // SEEDS]
        params = {"framework": framework, "lr": 0.01, "batch_size": 64, "momentum": 0.9, "weight_decay": 0.0005,
                  "lr_policy": "inv"}
        planned = {"is_default": True, "default": f"{framework}-mnist", "default_source": framework,
                   "own_default": True, "planned": {"framework": framework, "lr": 0.01, "batch_size": 64,
                                                    "semantics": "native", "dataset": "mnist"}}
        config_id = f"default:{framework}-mnist:{framework}:mnist:native"
    else:
        params = {"framework": str(rng.choice(names)), "lr": float(10 ** rng.uniform(-4, np.log10(0.3))),
                  "batch_size": int(rng.choice([32, 64, 128, 256])), "momentum": float(rng.uniform(0, 0.95)),
                  "weight_decay": float(10 ** rng.uniform(-5, -2)),
                  "lr_policy": str(rng.choice(["fixed", "inv", "cosine"]))}
        planned, config_id = {}, f"{number:012x}"
    spec = {"framework": params["framework"], "backend": None, "dataset": "mnist", "model": "lenet5", "layers": None,
            "batch_size": params["batch_size"], "lr": params["lr"], "epochs": EPOCHS, "iterations": None,
            "optimizer": "momentum", "momentum": params["momentum"], "weight_decay": params["weight_decay"],
            "lr_policy": params["lr_policy"], "gamma": 0.0001, "power": 0.75, "stepsize": 1000, "stepvalues": [],
            "val_fraction": 0.1, "semantics": "native", "init": None, "knobs": None, "device": "cpu", "threads": 1,
            "timeout": None, "data_dir": None, "keep_weights": None}
    return {"params": params, "planned": planned, "config_id": config_id, "spec": spec}


def _env(framework: str, version: str, seed: int, number: int) -> dict:
    return {"framework": framework, "host": "node-%03d" % (number % 125), "platform": "Linux-6.18.44-x86_64-with-glibc2.36",
            "cpu": "Intel(R) Xeon(R) Processor @ 2.80GHz", "device": "cpu", "git_revision": "d37cfd5", "seed": seed,
            "framework_version": version, "backend": None, "model": "lenet5",
            "semantics": {"regime": "native", "knobs": {k: framework for k in
                                                        ("init", "update", "weight_decay", "eps_rho", "schedule")},
                          "rule": {"momentum": "outside", "nesterov": "outside", "adam_eps": "corrected",
                                   "rmsprop_eps": "inside", "adam_epsilon": 1e-08, "rmsprop_epsilon": 1e-08,
                                   "rho": 0.9, "weight_decay": "l2"},
                          "init": f"{framework} default", "optimizer": f"{framework} SGD with momentum",
                          "schedule": f"{framework}'s scheduler, stepped per iteration"},
            "init": framework, "numerics": {"dtype": "float32", "loss_reduction": "mean"}, "python": "3.11.7",
            "numpy": "2.4.6", "interpreter": "/work/main/.venv/bin/python", "threads": 1, "gpu": None,
            "ray_node_id": "%056x" % (number * 2654435761 % (1 << 224))}


def trial_count(storage_url: str, name: str):
    """How many trials study `name` of an RDB storage holds; None without such a study (or storage file)."""
    from sensitivity.studies.storage import StorageError, open_storage
    try:
        storage = open_storage(storage_url, must_exist=True)
        study_id = storage.get_study_id_from_name(name)
    except (StorageError, KeyError):
        return None
    return _count(private_apis.rdb_storage(storage).engine, study_id)


def _count(engine, study_id: int) -> int:
    import sqlalchemy as sa
    with engine.connect() as connection:
        return connection.execute(sa.text("SELECT count(*) FROM trials WHERE study_id = :s"), {"s": study_id}).scalar()


def _insert(engine, study_id: int, trials: list, distributions: dict, internal: dict) -> None:
    """One transaction: the trials (their ids returned in order), then each child table in one bulk insert."""
    models = private_apis.rdb_models()
    tables = {m: m.__table__ for m in (models.TrialModel, models.TrialParamModel, models.TrialValueModel,
                                       models.TrialIntermediateValueModel, models.TrialUserAttributeModel)}
    with engine.begin() as connection:
        result = connection.execute(
            tables[models.TrialModel].insert().returning(tables[models.TrialModel].c.trial_id,
                                                         sort_by_parameter_order=True),
            [{"number": t["number"], "study_id": study_id, "state": t["state"], "datetime_start": t["start"],
              "datetime_complete": t["complete"]} for t in trials])
        ids = [row[0] for row in result]
        params, values, intermediate, attrs = [], [], [], []
        for trial_id, t in zip(ids, trials):
            params += [{"trial_id": trial_id, "param_name": k, "param_value": internal[k].to_internal_repr(v),
                        "distribution_json": distributions[k]} for k, v in t["params"].items()]
            if t["value"] is not None:  # a pruned trial keeps its last intermediate value, as Optuna's tell does
                values.append({"trial_id": trial_id, "objective": 0, "value": t["value"], "value_type": "FINITE"})
            intermediate += [{"trial_id": trial_id, "step": step, "intermediate_value": v,
                              "intermediate_value_type": "FINITE"} for step, v in enumerate(t["intermediate"], 1)]
            attrs += [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in t["attrs"].items()]
        for model, rows in ((models.TrialParamModel, params), (models.TrialValueModel, values),
                            (models.TrialIntermediateValueModel, intermediate),
                            (models.TrialUserAttributeModel, attrs)):
            if rows:
                connection.execute(tables[model].insert(), rows)


def main(argv=None) -> int:
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study")
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--storage", required=True, help="sqlite:///FILE or postgresql://...")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    total = write_study(args.storage, args.study, args.trials, args.seed)
    print(f"study {args.study}: {total} trials ({args.trials} written in {time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
