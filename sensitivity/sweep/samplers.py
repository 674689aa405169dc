"""The samplers a sweep offers (`--sampler`), and its pruners' names (`--pruner`), each Optuna's."""
from __future__ import annotations

import warnings
from typing import Optional

import numpy as np

from sensitivity.config.spaces import Space

SAMPLERS = ("tpe", "random", "grid", "qmc", "nsga2")
PRUNERS = ("none", "asha", "hyperband")


def make_sampler(name: str, space: Space, seed: Optional[int]):
    """The Optuna sampler `name` (one of SAMPLERS) for `space`: tpe is multivariate TPE over a window of recent
    trials (`windowed_tpe`), grid the grid of every parameter's steps."""
    # lazy: optuna
    import optuna
    import optuna.samplers as s
    # multivariate TPE is marked experimental; it is the better choice for correlated hyper-parameters
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    if name == "random":
        return s.RandomSampler(seed=seed)
    if name == "qmc":
        return s.QMCSampler(seed=seed, warn_independent_sampling=False)
    if name == "nsga2":
        return s.NSGAIISampler(seed=seed)
    if name == "grid":
        return s.GridSampler(_grid(space), seed=seed)
    from sensitivity.sweep.windowed_tpe import WindowedTPESampler  # lazy: optuna
    return WindowedTPESampler(seed=seed, multivariate=True)


def _grid(space: Space) -> dict:
    grid = {"framework": list(space.frameworks)}
    for name, p in space.parameters.items():
        if p.type == "categorical":
            grid[name] = list(p.choices)
        elif p.type == "int":
            grid[name] = list(range(p.low, p.high + 1, p.step))
        else:
            grid[name] = [float(v) for v in np.arange(p.low, p.high + p.step / 2, p.step)]
    return grid
