"""How a study's trials were drawn, read from the traces samplers leave or inferred from the trials themselves,
because the estimator of sensitivity indices has to follow the sampling (docs/experiments.md, "Which estimator
follows which sampling").

Optuna records no sampler. What it does leave:
- this tool's designs: the study's `design` user attribute (`sweep --design`): Sobol' or Morris, as designed;
- this tool's sweeps: the study's `samplers` user attribute, every sampler a sweep of it ran with;
- GridSampler: `grid_id` and `search_space` in each trial's system attributes;
- QMCSampler: a `qmc:...` key in the study's system attributes (its sample counter);
- CMA-ES: `cma:`, `sepcma:` or `cmawm:` keys in the trials' system attributes; GP, and TPE with its constant
  liar (Optuna 5's default): `gp:relative_params` or `tpe:relative_params` once the model samples; NSGA-II and
  III: `nsga2:` or `nsga3:` generations.
Random, and TPE without a constant liar or within its start-up, leave none. For those the family is inferred by a
test of the distinct configurations (one a configuration, whatever its seeds) against the prior: under independent draws each parameter's value, mapped through its prior's distribution
function (log where the space is log, a step spread over its width), is uniform on [0, 1]. After the first
STARTUP trials (TPE's random start-up), a Kolmogorov-Smirnov test per numeric parameter and a chi-square test per
categorical one; where the smallest p-value, Bonferroni-adjusted over the parameters, falls below INFERENCE_LEVEL
the trials crowd where a model-based sampler sent them, else they are read as independent draws. The output says
that the family was inferred, and the test's p-value: a random study is taken for model-based once in a hundred.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from sensitivity.config.design import DESIGN_ATTR
from sensitivity.private_apis import study_system_attrs
from sensitivity.studies.records import SAMPLERS_ATTR

STARTUP = 10  # Optuna's TPESampler and GPSampler draw this many trials from the prior before their model
INFERENCE_LEVEL = 0.01  # Bonferroni-adjusted p below which the trials are read as a model-based sampler's
MIN_INFERENCE = 30  # trials after the start-up that the test needs; fewer: the family is not inferred

DESIGN, GRID, QMC, INDEPENDENT, MODEL_BASED, UNKNOWN = ("design", "grid", "qmc", "independent", "model-based",
                                                       "unknown")
TRACES = (("grid_id", "GridSampler"), ("cma:", "CMA-ES"), ("sepcma:", "CMA-ES (separable)"),
          ("cmawm:", "CMA-ES with margin"), ("gp:relative_params", "GPSampler"),
          ("tpe:relative_params", "TPESampler"), ("nsga2:", "NSGA-II"), ("nsga3:", "NSGA-III"))


class Sampling(NamedTuple):
    """How the trials were drawn."""
    family: str  # DESIGN, GRID, QMC, INDEPENDENT (from the prior), MODEL_BASED or UNKNOWN
    sampler: str  # the sampler named by its trace, or what the test suggests ("random", "TPE or another model")
    why: str  # the sentence the output prints
    inferred: bool  # True where no trace named it: the test of the trials against the prior did
    p_value: float = math.nan  # the test's Bonferroni-adjusted p, where inferred

    @property
    def independent(self) -> bool:
        """Draws from the prior, each independent of the others: what given-data estimators assume."""
        return self.family in (GRID, QMC, INDEPENDENT)


def sampling_of(study, trials: list, params: list) -> Sampling:
    """The family of `trials` (frozen trials of `study`) over `params`: a trace where one is left, else inferred."""
    attrs = getattr(study, "user_attrs", None) or {}
    if DESIGN_ATTR in attrs:
        return Sampling(DESIGN, "sweep --design", "the study's design attribute (sweep --design)", False)
    used = list(attrs.get(SAMPLERS_ATTR) or ())
    if used:
        family = (QMC if set(used) == {"qmc"} else GRID if set(used) == {"grid"} else
                  INDEPENDENT if set(used) <= {"random", "qmc", "grid"} else MODEL_BASED)
        return Sampling(family, ", ".join(used), f"the samplers the sweeps of this study ran with ({', '.join(used)};"
                        " its `samplers` attribute)", False)
    for key, name in TRACES:
        if any(any(k.startswith(key) for k in t.system_attrs) for t in trials):
            family = GRID if name == "GridSampler" else MODEL_BASED
            return Sampling(family, name, f"{name}'s trace in the trials' system attributes ({key}...)", False)
    if any(k.startswith("qmc:") for k in _study_system_attrs(study)):
        return Sampling(QMC, "QMCSampler", "QMCSampler's trace in the study's system attributes (qmc:...)", False)
    return inferred(trials, params)


def _study_system_attrs(study) -> dict:
    try:
        return study_system_attrs(study)
    except AttributeError:  # not an Optuna study (a table of trials)
        return {}


def inferred(trials: list, params: list) -> Sampling:
    """The family inferred from the trials after the start-up: `uniformity` of each parameter under its prior."""
    later = sorted(trials, key=lambda t: t.number)[STARTUP:]
    if len(later) < MIN_INFERENCE:
        return Sampling(UNKNOWN, "unknown", f"no trace of a sampler, and {len(later)} trials after the first "
                        f"{STARTUP} are too few to test them against the prior (the test needs {MIN_INFERENCE})",
                        True)
    p = uniformity(later, params)
    if p < INFERENCE_LEVEL:
        return Sampling(MODEL_BASED, "TPE or another model-based sampler",
                        f"inferred: no trace of a sampler, and the trials after the first {STARTUP} crowd away from "
                        f"the prior (uniformity test, Bonferroni p = {p:.2g} < {INFERENCE_LEVEL}), as TPE's and GP's "
                        "do", True, p)
    return Sampling(INDEPENDENT, "random", f"inferred: no trace of a sampler, and the trials after the first {STARTUP} "
                    f"are consistent with independent draws from the prior (uniformity test, Bonferroni p = {p:.2g} "
                    f">= {INFERENCE_LEVEL}), as the random sampler's", True, p)


def configuration_key(trial, names) -> tuple:
    """What makes trials one configuration: the study's `config_id` where the trials record one (this tool's
    sweeps), else their parameters' values."""
    config = trial.user_attrs.get("config_id") if hasattr(trial, "user_attrs") else None
    return ("config", config) if config is not None else tuple(repr(trial.params.get(n)) for n in names)


def uniformity(trials: list, params: list, seed: int = 0) -> float:
    """The smallest p-value of the parameters' tests against their priors, times their number (capped at 1)."""
    # lazy: scipy
    from scipy import stats

    rng = np.random.default_rng(seed)
    found = []
    distinct = list({configuration_key(t, params): t for t in trials}.values())
    for name in params:
        chosen = [t for t in distinct if name in t.params]  # a configuration run on several seeds is one draw
        if len(chosen) < MIN_INFERENCE:
            continue
        dist = chosen[0].distributions[name]
        if hasattr(dist, "choices"):
            counts = np.bincount([dist.to_internal_repr(t.params[name]) for t in chosen], minlength=len(dist.choices))
            found.append(float(stats.chisquare(counts).pvalue) if len(dist.choices) > 1 else 1.0)
        else:
            u = prior_units(np.array([t.params[name] for t in chosen], dtype=float), dist, rng)
            found.append(float(stats.kstest(u, "uniform").pvalue))
    return min(1.0, min(found) * len(found)) if found else 1.0


def prior_units(values: np.ndarray, dist, rng=None) -> np.ndarray:
    """`values` of a numeric distribution mapped through its prior's distribution function to [0, 1]: Optuna's
    random sampler draws uniformly over [low - step/2, high + step/2] (in logs where `log`), so a value of a
    stepped or integer distribution is spread over its step (by `rng`; the middle of it without one)."""
    step = getattr(dist, "step", None) or (1 if type(dist).__name__ == "IntDistribution" else 0)
    spread = (rng.random(len(values)) - 0.5) * step if rng is not None else 0.0
    low, high = dist.low - step / 2, dist.high + step / 2
    if dist.log:
        low = max(low, dist.low / 2)  # a log integer's lower half-step may reach 0
        return np.clip((np.log(np.maximum(values + spread, low)) - math.log(low)) / (math.log(high) - math.log(low)),
                       0.0, 1.0)
    return (values + spread - low) / (high - low) if high > low else np.full(len(values), 0.5)
