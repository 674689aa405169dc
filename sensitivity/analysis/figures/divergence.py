"""Divergence: the share of trials that diverged in each bin of each parameter, per framework and regime
(`tables.divergence.divergence_rates`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.layout import per_parameter
from sensitivity.analysis.figures.style import framework_label
from sensitivity.analysis.table import REGIME
from sensitivity.analysis.tables.divergence import divergence_rates

TITLE = "Divergence"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per parameter, bin (`value`: its label; `order`, `centre`), framework and regime: n_trials,
      n_seeds, n_ok, n_collapsed, n_diverged, n_failed, divergence_rate (diverged / n_trials, 0-1), collapse_rate,
      failure_rate, n_defaults
      (framework defaults in the bin)
    """
    rows: pd.DataFrame


def compute(table, parameters=None, bins: int = 5) -> Info:
    return Info(divergence_rates(table, parameters, bins))


def plot(result: Info):
    data = result.rows

    def hover(rows):
        return (rows["framework"] + " (" + rows[REGIME] + ") " + rows["parameter"] + " " + rows["value"] + ": "
                + rows["n_diverged"].astype(str) + " diverged, " + rows["n_collapsed"].astype(str) + " collapsed, "
                + rows["n_failed"].astype(str) + " failed of n="
                + rows["n_trials"].astype(str) + " trials (" + rows["n_seeds"].astype(str) + " seeds)")
    fig = per_parameter(data, "divergence_rate", hover=hover, title="Divergence rate across each parameter's range",
                        y_title="diverged / trials",
                        marks=lambda rows: (rows["n_defaults"] > 0, rows["divergence_rate"]),
                        legend=lambda name, line: framework_label(name, line["n_trials"].sum(),
                                                                  line["n_seeds"].max()))
    return fig.update_yaxes(range=[-0.03, 1.03])  # a rate: never below 0 or above 1, even when all are 0
