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
- robustness: jax's models keep fewer of the samples they get right than torch's and tensorflow's, white-box and
  on the other frameworks' examples (KEEPS, TRANSFER_KEEPS); torch and tensorflow do not differ (null); on digits
  torch's clean accuracy (0.85) is far from tensorflow's (0.93): not compared;
- the sweep: lr matters, momentum and batch size do not; jax is the fastest and the least accurate.

`transfer_rows`, `crossover_rows` and `sweep_rows` give trial dicts; `as_frame` a trial table (fast, for many
studies), `as_study` an Optuna study written as the sweep writes one (for the command line).
"""
import functools
import warnings
import zlib

import numpy as np
from scipy.special import ndtr, ndtri

from sensitivity.core.correctness import pack, unpack
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
# the share of the samples it gets right when clean that a framework's models keep at each eps: white-box, and on
# the examples the other frameworks' models made
KEEPS = {"torch": [1.0, 0.7, 0.4, 0.05], "tensorflow": [1.0, 0.7, 0.4, 0.05], "jax": [1.0, 0.5, 0.25, 0.03]}
TRANSFER_KEEPS = {"torch": [1.0, 0.85, 0.6, 0.35], "tensorflow": [1.0, 0.85, 0.6, 0.35],
                  "jax": [1.0, 0.75, 0.45, 0.25]}
RHO = 0.5  # how much of a sample's robustness every model shares
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
        self.interactions = {}  # (family, dataset, split) -> its per-sample interactions, drawn once

    def samples(self, dataset: str, split: str) -> np.ndarray:
        key = (dataset, split)
        if key not in self.sets:
            size = TEST_SIZE[dataset] if split == "test" else VAL_SIZE
            self.sets[key] = _rng(self.study, "set", dataset, split).standard_normal(size)
        return self.sets[key]

    def run(self, config: str, dataset: str, seed: int, accuracy: float, family=None) -> dict:
        """One trained model of `config` (whose population accuracy on `dataset` is `accuracy`) at `seed`;
        configurations of one `family` share which samples they find hard (the same model on identical
        frameworks), their seeds' draws their own."""
        theta = ndtri(accuracy) * np.sqrt(1 + SHIFT ** 2 + LAMBDA ** 2 + TAU ** 2)
        shift = _rng(self.study, "seed", config, dataset, seed).normal(0, SHIFT)
        out = {}
        for split in ("test", "val"):
            z = self.samples(dataset, split)
            key = (family or config, dataset, split)
            if key not in self.interactions:
                self.interactions[key] = _rng(self.study, "config", *key).normal(0, TAU, len(z))
                self.interactions[key].flags.writeable = False
            interaction = self.interactions[key]
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
NULL_TRANSFER_KEEPS = {framework: TRANSFER_KEEPS["torch"] for framework in FRAMEWORKS}
# a configuration's effect: each default keeps what its home framework's models keep in KEEPS, on any framework
KEEPS_BY_DEFAULT = {default: KEEPS[home] for default, home in DEFAULTS.items()}
TRANSFER_KEEPS_BY_DEFAULT = {default: TRANSFER_KEEPS[home] for default, home in DEFAULTS.items()}


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


def area(keeps) -> float:
    """The area under a robust-accuracy curve over EPS (1 at eps 0), divided by the largest eps."""
    return float(np.trapezoid(keeps, EPS) / EPS[-1])


def robustness_records(rows: list, keeps=None, transfer_keeps=None, study=0, zero_gradient=None,
                       by="framework", canonical=None, surrogate=False) -> tuple:
    """({trial number: record}, protocol) as `sensitivity robustness` records them, for every trained model of
    `rows` (models as trained: no checkpoints), in its sets (each framework's own default; each default on every
    framework). A sample a model gets right when clean survives eps with the probability its framework keeps
    (`keeps`, white-box; `transfer_keeps`, on the other frameworks' examples; NULL_KEEPS plants nothing), sample
    by sample, samples sharing part of their robustness across models (RHO). `zero_gradient`: {framework:
    share} of samples with an all-zero input gradient, which FGSM leaves unperturbed (gradient masking).
    `by`: what the keeps are keyed by, "framework" (a framework effect) or "default" (a configuration's effect);
    `canonical`: (keeps, transfer_keeps) of the canonical regime's models, where they differ from native's (None:
    the same). `surrogate`: the transfer examples come from one surrogate per seed (`transfer["surrogate"]`, as
    `sensitivity robustness` records them now), not from the other frameworks' models."""
    keeps, transfer_keeps = keeps or KEEPS, transfer_keeps or keeps or TRANSFER_KEEPS
    chosen = {"native": (keeps, transfer_keeps), "canonical": canonical or (keeps, transfer_keeps)}
    models = {n: r for n, r in enumerate(rows) if r.get("test_correct") and "crossover" not in r}
    sets = _sets(models)
    records = {}
    for n, row in models.items():
        clean = unpack(row["test_correct"])
        masked = (zero_gradient or {}).get(row["framework"], 0.0)
        state = {"samples": len(clean), "clean": float(clean.mean()), "eps": EPS, "attacks": ["fgsm", "pgd"],
                 "epoch": None, "val_accuracy": row["val_accuracy"], "zero_gradient": masked,
                 "correct": {"clean": pack(clean)}, "white_box": {}, "transfer": {}, "transfer_correct": {}}
        own, transferred = chosen.get(row["semantics"], chosen["native"])
        for attack, lift in (("pgd", 0.0), ("fgsm", 0.05)):  # FGSM a little weaker than PGD
            shown = _survivors(clean, np.minimum(1.0, np.asarray(own[row[by]]) + lift), study, n, attack,
                               row["dataset"], masked)
            state["correct"][attack] = [pack(c) for c in shown]
            state["white_box"][attack] = [float(c.mean()) for c in shown]
        if surrogate:
            state["surrogate"] = {"model": "mlp128", "framework": "torch", "seed": row["seed"],
                                  "describe": "one mlp128 per seed trained on torch (planted)"}
        sources = ["surrogate"] if surrogate else sorted({m for one in sets for m in one["members"]
                                                          if n in one["members"]})
        for source in sources:
            if source != "surrogate" and (models[source]["framework"] == row["framework"]
                                          or models[source]["seed"] != row["seed"]):
                continue
            state["transfer_correct"][str(source)], state["transfer"][str(source)] = {}, {}
            for attack in ("pgd", "fgsm"):
                shown = _survivors(clean, np.asarray(transferred[row[by]]), study, (n, source), attack,
                                   row["dataset"])
                state["transfer_correct"][str(source)][attack] = [pack(c) for c in shown]
                state["transfer"][str(source)][attack] = [float(c.mean()) for c in shown]
        records[n] = {"published": state, "checkpoints": {}}
    protocol = {"file": "planted", "sha256": "0" * 64, "eps": EPS[1:], "clean_margin": 0.02, "samples": None,
                "attacks": ["fgsm", "pgd"], "bootstrap": {"resamples": 400, "seed": 0}, "sets": sets}
    return records, protocol


LEVELS = {"torch": 1.0, "tensorflow": 0.8, "mxnet": 0.6}  # how far each framework's default trains (matched world)
EPOCHS = 10


def level_accuracy(level: float) -> float:
    return 0.90 + 0.05 * level


def level_keeps(level: float) -> list:
    """What a model keeps at each eps, by how far it trained alone: the same for every framework."""
    return [1.0, 0.45 + 0.4 * level, 0.2 + 0.35 * level, 0.02 + 0.05 * level]


def matched_world(study: int, seeds: int = 5, margin: float = 0.03, levels=None, regime: str = "native",
                  tolerance=None, identical: bool = False) -> tuple:
    """(rows, (records, protocol)): three frameworks' own defaults on mnist5k, which train to different levels
    (LEVELS) over EPOCHS epochs; robustness depends on the level alone (`level_keeps`), so frameworks differ only
    as far as their training does. Each model has a checkpoint per epoch; the protocol matches them at the target
    (the lowest final validation accuracy) as `sensitivity robustness` does. Models as trained differ under
    attack; matched, they must not."""
    from sensitivity.experiments.robustness import nearest_bracket

    world, rows = World(study), []
    levels = {}
    for framework, top in (levels or LEVELS).items():
        for seed in range(seeds):
            curve = []
            for epoch in range(1, EPOCHS + 1):
                level = top * epoch / EPOCHS
                run = world.run(f"matched/{framework}/epoch{epoch}", "mnist5k", seed, level_accuracy(level),
                                family=f"matched/epoch{epoch}" if identical else None)
                curve.append({"epoch": epoch, **run})
                levels[(len(rows), epoch)] = level
            rows.append({"framework": framework, "dataset": "mnist5k", "semantics": regime, "seed": seed,
                         "status": "ok", "default": f"{framework}-default", "own_default": True, "is_default": True,
                         "default_source": framework, "source_dataset": "mnist", "budget_scale": 1.0,
                         "train_time_s": SPEED.get(framework, 10.0), "config_id": f"matched:{framework}",
                         **curve[-1], "checkpoints": curve})
    members = list(range(len(rows)))
    target = min(rows[n]["val_accuracy"] for n in members)
    matched = {}
    for n in members:
        points = [(p["epoch"], p["val_accuracy"]) for p in rows[n]["checkpoints"][:-1]]
        matched[str(n)] = nearest_bracket([*points, (None, rows[n]["val_accuracy"])], target)[0]
    # one configuration on every framework (the claim's comparison), trained to a framework's level
    sets = [{"key": f"config/{regime}/mnist5k/same-config", "kind": "config", "regime": regime,
             "dataset": "mnist5k", "default": "same-config", "members": members, "target": target, "matched": matched}]
    states = {}
    for n in members:
        for epoch in {matched[str(n)], None}:
            at = EPOCHS if epoch is None else epoch
            point = rows[n]["checkpoints"][at - 1]
            clean = unpack(point["test_correct"])
            keeps = level_keeps(levels[(n, at)])
            state = {"samples": len(clean), "clean": float(clean.mean()), "eps": EPS, "attacks": ["fgsm", "pgd"],
                     "epoch": epoch, "val_accuracy": point["val_accuracy"], "zero_gradient": 0.0,
                     "correct": {"clean": pack(clean)}, "white_box": {}, "transfer": {}, "transfer_correct": {}}
            for attack, lift in (("pgd", 0.0), ("fgsm", 0.05)):
                shown = _survivors(clean, np.minimum(1.0, np.asarray(keeps) + lift), study, (n, at), attack,
                                   "mnist5k")
                state["correct"][attack], state["white_box"][attack] = ([pack(c) for c in shown],
                                                                        [float(c.mean()) for c in shown])
            states[(n, epoch)] = state
    for (n, epoch), state in states.items():  # each state on the other frameworks' states of its seed
        for (m, other), _ in states.items():
            if rows[m]["framework"] == rows[n]["framework"] or rows[m]["seed"] != rows[n]["seed"]:
                continue
            at = EPOCHS if epoch is None else epoch
            key = str(m) if other is None else f"{m}@{other}"
            keeps = np.minimum(1.0, np.asarray(level_keeps(levels[(n, at)])) + 0.15)  # transfer: weaker
            shown = _survivors(unpack(state["correct"]["clean"]), keeps, study, (n, at, key), "pgd", "mnist5k")
            state["transfer_correct"][key] = {"pgd": [pack(c) for c in shown]}
            state["transfer"][key] = {"pgd": [float(c.mean()) for c in shown]}
    records = {n: {"published": states[(n, None)],
                   "checkpoints": {str(e): states[(m, e)] for (m, e) in states if m == n and e is not None}}
               for n in members}
    protocol = {"file": "planted", "sha256": "0" * 64, "eps": EPS[1:], "clean_margin": margin, "samples": None,
                "attacks": ["fgsm", "pgd"], "bootstrap": {"resamples": 400, "seed": 0}, "sets": sets}
    if tolerance is not None:
        protocol["control_tolerance"] = tolerance
    for row in rows:
        row.pop("checkpoints")
    return rows, (records, protocol)


def _survivors(clean: np.ndarray, keeps, study, model, attack: str, dataset: str, masked: float = 0.0) -> list:
    """Per eps, the samples still right: right when clean, and robust enough for that eps."""
    shared = _shared_robustness(study, dataset, len(clean))
    own = _rng(study, "robust", model, attack).standard_normal(len(clean))
    u = ndtr(RHO * shared + np.sqrt(1 - RHO ** 2) * own)
    untouched = _rng(study, "masked", model).random(len(clean)) < masked if attack == "fgsm" and masked else False
    return [clean & ((u < keep) | untouched) for keep in keeps]


@functools.lru_cache(maxsize=None)
def _shared_robustness(study, dataset: str, n: int) -> np.ndarray:
    """The part of each sample's robustness that every model of `study` on `dataset` shares, drawn once (read
    only)."""
    shared = _rng(study, "robust", dataset).standard_normal(n)
    shared.flags.writeable = False
    return shared


def _sets(models: dict) -> list:
    """The sets `sensitivity robustness` would make of these models: own defaults, and each default."""
    groups: dict = {}
    for n, row in models.items():
        base = (row["semantics"], row["dataset"])
        if row.get("own_default"):
            groups.setdefault(("own", *base, None), []).append(n)
        if row.get("default"):
            groups.setdefault(("config", *base, row["default"]), []).append(n)
    return [{"key": "/".join(p for p in key if p), "kind": key[0], "regime": key[1], "dataset": key[2],
             "default": key[3], "members": sorted(members), "target": None, "matched": None}
            for key, members in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0])))
            if len({models[n]["framework"] for n in members}) > 1]


def sweep_rows(rng, configs=45, seeds=2, regimes=("native",), defaults=True, peaks=None, speeds=None) -> list:
    """A sweep on mnist5k: sampled lr (matters), momentum and batch size (do not); the defaults first.
    `peaks` replaces PEAK, each framework's accuracy at the best lr, and `speeds` SPEED, its train time at
    batch 64 (a batch of b takes 64 / b of it)."""
    peaks, speeds, rows = peaks or PEAK, speeds or SPEED, []
    for regime in regimes:
        offset = CANONICAL_OFFSET if regime == "canonical" else 0.0
        if defaults:
            for default, framework in DEFAULTS.items():
                test, val = draw(rng, true_accuracy(default, framework, "mnist5k", regime), seeds)
                rows += [{"framework": framework, "dataset": "mnist5k", "semantics": regime, "default": default,
                          "default_source": framework, "source_dataset": "mnist", "own_default": True,
                          "is_default": True, "planned": True, "seed": s, "accuracy": float(test[s]),
                          "val_accuracy": float(val[s]), "train_time_s": speeds[framework], "lr": None,
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
                      "train_time_s": speeds[framework] * 64 / batch * float(rng.lognormal(0, 0.05))}
                     for s in range(seeds)]
    return rows


PARAMS = ("lr", "momentum", "batch_size")
RESULT = ("seed", "status", "accuracy", "val_accuracy", "loss", "train_time_s", "config_id", "default", "default_source",
          "source_dataset", "own_default", "is_default", "budget_scale", "planned", "test_correct", "crossover",
          "placebo", "tuned_for", "tuned_config", "tuned_key", "parallel", "timing", "timed_study", "timed_trial",
          "fresh_seed")


def as_frame(rows: list, study: str, robustness=None, dataset="mnist5k"):
    """A trial table (`trials_table`) of the rows; `robustness`: (records, protocol) of `robustness_records`."""
    import pandas as pd

    from sensitivity.analysis.table import trials_table

    frame = pd.DataFrame([{"number": i, "state": "COMPLETE", "param_framework": r["framework"],
                           **{f"param_{p}": r[p] for p in PARAMS if p in r}, "curve": r.get("curve", "[]"),
                           **{k: r.get(k) for k in (*RESULT, "dataset", "semantics")}} for i, r in enumerate(rows)])
    records, protocol = robustness if isinstance(robustness, tuple) else (robustness or {}, None)
    frame.attrs.update(study=study, dataset=dataset, robustness=records, robustness_protocol=protocol)
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
    records, protocol = robustness if isinstance(robustness, tuple) else (robustness or {}, None)
    for number, record in records.items():
        study.set_user_attr(f"robustness:{number}", record)
    if protocol:
        study.set_user_attr("robustness_protocol", protocol)
    return study
