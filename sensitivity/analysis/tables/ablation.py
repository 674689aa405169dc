"""The ablation path of `sensitivity ablate`: one row per step, with its 95% intervals.

The path is the study's user attribute `ablation` (the knob changed at each step and the trials of its
seeds); accuracy and time come from those trials. The step was chosen on validation accuracy; test accuracy
is shown beside it, never used to choose.
"""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.table import TRAINED, NotEnoughData, trials_table

METRICS = ("val_accuracy", "accuracy", "train_time_s")


class Ablation(NamedTuple):
    """The ablation path (`ablation_path`), the ablation figure's data. Fields:
    - rows: one row per step of the path: step, change, framework, setting, n (trials), and per metric
      (val_accuracy, accuracy, train_time_s in s) its _mean, _low, _high (95% interval), _method; delta (the change
      of mean validation accuracy from the step before)
    - source: the configuration the path starts from
    - target: the configuration it walks to
    - inert: the knobs with no effect here, not walked
    - seeds: seeds per step
    """
    rows: pd.DataFrame
    source: str
    target: str
    inert: tuple
    seeds: int


def ablation_path(table) -> Ablation:
    """The path of a study of `sensitivity ablate` (`Ablation`)."""
    table = trials_table(table)
    record = table.attrs.get("ablation")
    if not record:
        raise NotEnoughData("the ablation path needs a study of sensitivity ablate")
    by_number = table.set_index("number")
    rows, previous = [], None
    for i, step in enumerate(record["steps"]):
        trials = by_number.loc[by_number.index.intersection(step["trials"])]
        trials = trials[trials["outcome"].isin(TRAINED)]
        row = {"step": i, "change": _change(record, i), "framework": step["framework"],
               "setting": ", ".join(f"{k}={v}" for k, v in step["knobs"].items()), "n": len(trials)}
        for metric in METRICS:
            interval = mean_interval(trials[metric], metric)
            row.update({f"{metric}_mean": interval.mean, f"{metric}_low": interval.low,
                        f"{metric}_high": interval.high, f"{metric}_method": interval.method})
        row["delta"] = None if previous is None else row["val_accuracy_mean"] - previous
        previous = row["val_accuracy_mean"]
        rows.append(row)
    return Ablation(pd.DataFrame(rows), record["from"], record["to"], tuple(record.get("inert") or ()),
                    record["seeds"])


def _change(record: dict, i: int) -> str:
    steps = record["steps"]
    if i == 0:
        return f"start: {record['from']}"
    knob, before, after = steps[i]["knob"], steps[i - 1], steps[i]
    if knob == "framework":
        return f"framework: {before['framework']} -> {after['framework']}"
    return f"{knob}: {before['knobs'][knob]} -> {after['knobs'][knob]}"

