"""How often training diverges across each parameter's range: per bin of a numeric parameter (per value
of a categorical one), per framework and per regime (`semantics`), with counts.

Trials that ran to a result (ok, collapsed or diverged) and failed ones count; pruned trials do not (a scheduler
stopped them before their outcome was known). Collapses and failures are counted beside divergences, never
merged with them.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.tables.parameter_values import bin_parameter, parameter_distributions
from sensitivity.analysis.table import BY_FRAMEWORK, PARAM, NotEnoughData, grouped, trials_table

COUNTED = ("ok", "collapsed", "diverged", "failed")


def divergence_rates(table, parameters=None, bins: int = 5) -> pd.DataFrame:
    """One row per parameter, bin, framework and regime: n_trials, n_seeds, n_ok, n_collapsed, n_diverged,
    n_failed, divergence_rate (diverged / n_trials), collapse_rate and failure_rate; `order` sorts the bins,
    `centre` places them."""
    table = trials_table(table)
    rows = table[table["outcome"].isin(COUNTED)]
    distributions = parameter_distributions(table, framework=False)
    names = [n for n in (parameters or distributions) if n in distributions]
    if rows.empty or not names:
        raise NotEnoughData("divergence rates need trials that trained or failed, and at least one tuned "
                            "parameter besides the framework")
    extra = {"centre": ("centre", "first")}
    if "is_default" in rows:
        extra["n_defaults"] = ("is_default", "sum")  # framework defaults in the bin, to mark them
    parts = []
    for name in names:
        binned = rows.join(bin_parameter(rows[PARAM + name], distributions[name], bins), how="inner")
        parts.append(grouped(binned.assign(parameter=name), keys=("parameter", "order", "value", *BY_FRAMEWORK),
                             outcomes=True, **extra))
    out = pd.concat(parts, ignore_index=True).drop(columns="n_pruned")
    out["divergence_rate"] = out["n_diverged"] / out["n_trials"]
    out["collapse_rate"] = out["n_collapsed"] / out["n_trials"]
    out["failure_rate"] = out["n_failed"] / out["n_trials"]
    if "n_defaults" not in out:
        out["n_defaults"] = 0
    return out
