"""Isolation plots as in Google's deep-learning tuning playbook: for each value (or bin) of a scientific
parameter, the best accuracy over the nuisance parameters (all the others), per framework and regime
(`semantics`: the best of one regime is never taken from the other).

A configuration's accuracy is its mean over seeds (`seeds.seed_intervals`), so a lucky seed does not make
a configuration best. Each point names the configuration that won it and its number of seeds.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.tables.seeds import seed_intervals
from sensitivity.analysis.tables.parameter_values import bin_parameter, configuration_label, parameter_distributions
from sensitivity.analysis.table import BY_FRAMEWORK, PARAM, NotEnoughData, regime_sorted, trials_table

COLUMNS = ["parameter", "value", "order", "centre", *BY_FRAMEWORK, "best_accuracy", "n_configs", "n_seeds",
           "config_id", "nuisance", "default_accuracy"]
KEYS = ["order", *BY_FRAMEWORK]


def isolation(table, parameters=None, bins: int = 5) -> pd.DataFrame:
    """One row per scientific parameter, bin, framework and regime: best_accuracy (mean over seeds of the best
    configuration), n_configs in the bin, n_seeds and config_id of the best, its nuisance parameters,
    and default_accuracy (the framework default configuration's, when it falls in the bin)."""
    table = trials_table(table)
    configs = seed_intervals(table, metrics=("accuracy",)).dropna(subset=["accuracy_mean"])
    distributions = parameter_distributions(table, framework=False)
    names = [n for n in (parameters or distributions) if n in distributions]
    if configs.empty or not names:
        raise NotEnoughData("isolation plots need complete trials and at least one tuned parameter "
                            "besides the framework")
    parts = []
    for name in names:
        binned = configs.join(bin_parameter(configs[PARAM + name], distributions[name], bins), how="inner")
        best = binned.loc[binned.groupby(KEYS)["accuracy_mean"].idxmax()]
        counts = binned.groupby(KEYS).size().rename("n_configs")
        nuisance = [n for n in distributions if n != name]
        part = best.assign(parameter=name, best_accuracy=best["accuracy_mean"],
                           nuisance=configuration_label(best, nuisance).to_numpy())
        part = part.join(counts, on=KEYS)
        part["default_accuracy"] = _default_accuracy(binned, part)
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    return regime_sorted(out[COLUMNS], ["parameter", *KEYS])


def _default_accuracy(binned: pd.DataFrame, part: pd.DataFrame) -> pd.Series:
    if "is_default" not in binned:
        return pd.Series(float("nan"), index=part.index)
    defaults = binned[binned["is_default"].astype(bool)].groupby(KEYS)["accuracy_mean"].max()
    keys = pd.MultiIndex.from_frame(part[KEYS])
    return pd.Series(defaults.reindex(keys).to_numpy(), index=part.index)
