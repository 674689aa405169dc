"""Isolation of each parameter: the best accuracy in each of its bins over the others (the nuisance parameters),
per framework and regime (`tables.isolation`)."""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.figures.layout import per_parameter
from sensitivity.analysis.figures.style import framework_label
from sensitivity.analysis.table import REGIME
from sensitivity.analysis.tables.isolation import isolation

TITLE = "Isolation of each parameter"  # the heading of its report section


class Info(NamedTuple):
    """Fields:
    - rows: one row per parameter, bin (`value`: its label; `order`, `centre`), framework and regime: best_accuracy
      (mean over seeds of the bin's best configuration, 0-1), n_configs, n_seeds and config_id of the best, nuisance
      (the best's other parameters, text), default_accuracy (the framework default's, where it falls in the bin;
      else NaN)
    """
    rows: pd.DataFrame


def compute(table, parameters=None, bins: int = 5) -> Info:
    return Info(isolation(table, parameters, bins))


def plot(result: Info):
    data = result.rows

    def hover(rows):
        return (rows["framework"] + " (" + rows[REGIME] + ") " + rows["parameter"] + " " + rows["value"]
                + ": best accuracy " + rows["best_accuracy"].round(4).astype(str) + " (n="
                + rows["n_seeds"].astype(str) + " seeds; best of " + rows["n_configs"].astype(str)
                + " configurations)<br>nuisance: " + rows["nuisance"])
    return per_parameter(data, "best_accuracy", hover=hover, title="Isolation: best accuracy over the nuisance "
                         "parameters (mean over seeds)", y_title="best accuracy",
                         marks=lambda rows: (rows["default_accuracy"].notna(), rows["default_accuracy"]),
                         legend=lambda name, line: framework_label(name, line["n_configs"].sum(),
                                                                   line["n_seeds"].max(), "configurations"))
