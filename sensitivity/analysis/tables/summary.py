"""A framework-by-dataset summary as DLBench reports it: accuracy, train time, throughput, memory, CPU
and GPU side by side, with the number of trials and seeds behind each figure; one row per regime."""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.tables.resources import resource_use
from sensitivity.analysis.tables.seeds import best_configurations
from sensitivity.analysis.table import BY_FRAMEWORK, NotEnoughData, grouped, trials_table

KEYS = ("dataset", *BY_FRAMEWORK)


def framework_summary(table) -> pd.DataFrame:
    """One row per dataset, framework and regime (`semantics`): every final trial counted by outcome, the
    best and median accuracy of the ok trials, the best configuration (by mean over seeds) with its accuracy
    and train time and their intervals (`seeds.best_configurations`), and the median resource figures of the
    trained ones."""
    table = trials_table(table)
    if table.empty:
        raise NotEnoughData("the summary needs at least one final trial")
    counts = grouped(table, keys=KEYS, outcomes=True)
    ok = table[table["outcome"] == "ok"]
    accuracy = ok.groupby(list(KEYS))["accuracy"].agg(best_accuracy="max", median_accuracy="median")
    out = counts.join(accuracy, on=list(KEYS))
    try:
        best = best_configurations(table, KEYS)
        out = out.merge(best.drop(columns="best_config_id"), on=list(KEYS), how="left")
    except NotEnoughData:
        pass
    try:
        resources = resource_use(table, keys=KEYS, with_defaults=False)
        out = out.join(resources.drop(columns=["n_trials", "n_seeds"]).set_index(list(KEYS)), on=list(KEYS))
    except NotEnoughData:
        pass  # counts and accuracy still summarise failed-only or resource-less studies
    return out
