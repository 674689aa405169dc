"""Studies and trial frames made inside the tests, written as the sweep writes them (searcher.py):
parameters with the framework among them, the result fields as user attributes, COMPLETE for ok and
diverged runs, PRUNED and FAIL with their status. No training: accuracy and time are formulas of the
parameters and of the regime (a canonical run scores CANONICAL_OFFSET below the native one, so an analysis
that mixes regimes gets means no regime has). A trial's regime is recorded in its `spec` user attribute,
as the sweep records it, and, with `regime_param`, is also a parameter; without regimes no spec is
recorded (a study from before regimes: canonical)."""
import math

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

optuna.logging.set_verbosity(optuna.logging.WARNING)

DISTRIBUTIONS = {
    "framework": CategoricalDistribution(("jax", "tensorflow", "torch")),
    "lr": FloatDistribution(1e-4, 1.0, log=True),
    "batch_size": IntDistribution(16, 256, log=True),
    "momentum": FloatDistribution(0.0, 0.99),
    "optimizer": CategoricalDistribution(("sgd", "momentum", "adam")),
}
REGIMES = ("native", "canonical")
WITH_REGIME = {**DISTRIBUTIONS, "semantics": CategoricalDistribution(REGIMES)}
SPEED = {"jax": 1.0, "tensorflow": 1.5, "torch": 1.2}
CANONICAL_OFFSET = 0.05
OPTIMIZERS = {"jax": "optax.sgd", "tensorflow": "keras.optimizers.SGD", "torch": "torch.optim.SGD"}
HAND_WRITTEN = "hand-written: sensitivity.core.optim.rule_update"


def result_of(params: dict, seed: int, epochs: int = 3, regime=None) -> dict:
    """A made-up but consistent TrialResult: accuracy peaks at lr 0.01 and collapses past lr 0.3; canonical
    runs score CANONICAL_OFFSET less."""
    lr = params["lr"]
    diverged = lr > 0.3
    accuracy = 0.1 if diverged else 0.97 - 0.08 * (math.log10(lr) + 2) ** 2 + 0.002 * seed
    accuracy -= CANONICAL_OFFSET if regime == "canonical" and not diverged else 0.0
    train_time = SPEED[params["framework"]] * 2000 / params["batch_size"] * (1 + 0.01 * seed)
    curve = [{"epoch": e + 1, "train_loss": 2.3 / (e + 1), "val_accuracy": accuracy * (e + 1) / epochs,
              "test_accuracy": accuracy * (e + 1) / epochs, "seconds": train_time / epochs} for e in range(epochs)]
    return {"status": "diverged" if diverged else "ok", "reason": "", "accuracy": accuracy,
            "val_accuracy": accuracy - 0.01, "loss": 0.1, "curve": curve, "train_time_s": train_time,
            "throughput": 60000 / train_time, "peak_rss_mb": 500 + 100 * SPEED[params["framework"]],
            "cpu_percent": 150.0, "gpu": None,
            "env": {"framework": params["framework"], "framework_version": f"{params['framework']}-1.0",
                    "python": "3.11.7", "numpy": "2.4", "host": "testhost", "cpu": "Test CPU", "gpu": None,
                    "git_revision": "abc1234", "seed": seed,
                    **({"semantics": semantics_record(params["framework"], regime)} if regime else {})}}


def semantics_record(framework: str, regime: str) -> dict:
    """What a result records of its regime (sensitivity.core.semantics.describe), reduced to what analysis reads."""
    return {"regime": regime, "init": "numpy" if regime == "canonical" else f"{framework} default",
            "optimizer": OPTIMIZERS[framework] if regime == "native" else HAND_WRITTEN}


def tell(study, seed: int, config_id: str, state: str = "auto", extra: dict | None = None, regime=None,
         distributions=DISTRIBUTIONS):
    """Ask a trial (the queued parameters first), record a result as the searcher does, and tell it; a
    `regime` is recorded in the trial's spec."""
    trial = study.ask(distributions)  # the enqueued parameters, when queued
    result = result_of(trial.params, seed, regime=regime)
    attrs = {"seed": seed, "config_id": config_id, **(extra or {})}
    if regime:
        attrs["spec"] = {"framework": trial.params["framework"], "semantics": regime, "seed": seed}
    if state == "fail":
        result = {"status": "failed", "reason": "worker crashed"}
    elif state == "pruned":
        result = {**result, "status": "pruned"}
    for key, value in {**result, **attrs}.items():
        trial.set_user_attr(key, value)
    if state == "fail":
        study.tell(trial, state=TrialState.FAIL)
    elif state == "pruned":
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, [result["accuracy"], result["train_time_s"]])
    return trial


def make_study(n_configs=6, seeds=1, failed=0, pruned=0, defaults=(), seed=0, name="analysis-test", regimes=(),
               regime_param=False):
    """A two-objective study (accuracy up, train time down) of `n_configs` configurations x `seeds` (x each
    of `regimes`, with the same config_id in each), plus `failed` FAIL and `pruned` PRUNED trials (in the
    first regime); configurations listed in `defaults` (by index) are marked `is_default`. Parameters come
    from a seeded random sampler, queued so seeds share them; with `regime_param`, `semantics` is one."""
    study = optuna.create_study(study_name=name, directions=["maximize", "minimize"],
                                sampler=optuna.samplers.RandomSampler(seed=seed))
    rng = np.random.default_rng(seed)
    frameworks = DISTRIBUTIONS["framework"].choices
    runs, asked = tuple(regimes) or (None,), dict(distributions=WITH_REGIME if regime_param else DISTRIBUTIONS)
    for index in range(n_configs):
        params = {"framework": frameworks[index % 3], "lr": float(10 ** rng.uniform(-4, 0)),
                  "batch_size": int(rng.choice([16, 32, 64, 128, 256])), "momentum": float(rng.uniform(0, 0.99)),
                  "optimizer": str(rng.choice(["sgd", "momentum", "adam"]))}
        extra = {"is_default": True} if index in defaults else {}
        for regime in runs:
            for s in range(seeds):
                study.enqueue_trial(_with_regime(params, regime, regime_param))
                tell(study, s, f"c{index}", extra=extra, regime=regime, **asked)
    for index in range(failed):
        study.enqueue_trial(_with_regime({"framework": frameworks[index % 3], "lr": 0.01, "batch_size": 64,
                                          "momentum": 0.9, "optimizer": "sgd"}, runs[0], regime_param))
        tell(study, 0, f"f{index}", state="fail", regime=runs[0], **asked)
    for index in range(pruned):
        study.enqueue_trial(_with_regime({"framework": frameworks[index % 3], "lr": 0.001, "batch_size": 32,
                                          "momentum": 0.5, "optimizer": "adam"}, runs[0], regime_param))
        tell(study, 0, f"p{index}", state="pruned", regime=runs[0], **asked)
    return study


def _with_regime(params: dict, regime, as_parameter: bool) -> dict:
    return {**params, "semantics": regime} if as_parameter else params


def frame(*rows, **common):
    """A frame shaped like `sensitivity.studies.catalog.trials_frame`, from short row dicts: `framework`
    becomes param_framework, other unknown keys param_<key> unless they are result or trial fields
    (`semantics` is the recorded regime, as trials_frame gives it; `param_semantics` the parameter)."""
    import json

    import pandas as pd

    fields = {"number", "state", "status", "seed", "config_id", "accuracy", "val_accuracy", "loss", "train_time_s",
              "throughput", "peak_rss_mb", "cpu_percent", "gpu_utilization_percent", "gpu_peak_memory_mb",
              "gpu_energy_j", "curve", "is_default", "orphaned", "surplus", "framework_version", "dataset",
              "semantics"}
    out = []
    for i, row in enumerate(rows):
        row = {"number": i, "state": "COMPLETE", "status": "ok", "seed": 0, "curve": [], **common, **row}
        row["curve"] = json.dumps(row["curve"])
        out.append({(k if k in fields or k.startswith("param_") else f"param_{k}"): v for k, v in row.items()})
    return pd.DataFrame(out)


class FrozenTrialsStudy(optuna.Study):
    """A minimising study serving a fixed list of frozen trials, for Optuna's own importance evaluators (the
    references the package's are checked against)."""

    def __init__(self, trials: list):
        storage = optuna.storages.InMemoryStorage()
        storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "trials-table")
        super().__init__(study_name="trials-table", storage=storage)
        self._frozen_trials = trials

    def get_trials(self, deepcopy: bool = True, states=None) -> list:
        return [t for t in self._frozen_trials if states is None or t.state in states]
