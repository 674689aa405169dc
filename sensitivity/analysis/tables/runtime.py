"""Runtime judged with accuracy, beyond the frontier: the same configuration on every framework, and how much the
sweep's own concurrency stretched the times it quotes.

`same_configuration_times`: in a study of defaults (each default on every framework), per regime, dataset and
default, the target is the lowest final validation accuracy among the frameworks (their means over seeds). Each
run's time to target is its train time summed over the epochs up to the first whose validation accuracy reaches
it; its accuracy at equal wall-clock is its validation accuracy after the last epoch it finished within T, the
shortest mean train time among the frameworks. Means over seeds, with intervals (`intervals.mean_interval`).

`parallel_ratios`: the runs of `sensitivity timing` (marked `timing: alone`) ran configurations of a sweep
again one at a time, pinned to one core; per framework, the ratio of the sweep's train time of each
configuration and seed to its time alone: its geometric mean over the runs alone, with an interval. A time
the findings quote from the sweep is that many times what the framework takes alone.
"""
from __future__ import annotations

import math

import pandas as pd

from sensitivity.analysis.intervals import mean_interval
from sensitivity.analysis.table import REGIME, parse_curves, trained

TIMES = [REGIME, "dataset", "default", "framework", "n", "target", "reached", "time_to_target", "time_text", "budget",
         "at_budget", "at_budget_text"]
RATIOS = ["framework", "configurations", "ratio", "low", "high", "parallel"]


def same_configuration_times(table) -> pd.DataFrame:
    """One row per regime, dataset, default and framework (TIMES); empty where the study holds no default run
    on two frameworks or more."""
    rows = trained(table)
    rows = rows[rows["outcome"].eq("ok")] if "outcome" in rows else rows
    if "default" not in rows or rows["default"].isna().all():
        return pd.DataFrame(columns=TIMES)
    rows = rows[rows["default"].notna()].copy()
    rows["parsed"] = parse_curves(rows["curve"].fillna("[]").tolist())
    out = []
    for (regime, dataset, default), part in rows.groupby([REGIME, "dataset", "default"], sort=True):
        by_framework = dict(list(part.groupby("framework")))
        if len(by_framework) < 2:
            continue
        target = min(runs["val_accuracy"].mean() for runs in by_framework.values())
        budget = min(runs["train_time_s"].mean() for runs in by_framework.values())
        for framework, runs in sorted(by_framework.items()):
            reach = [_time_to(curve, target) for curve in runs["parsed"]]
            at = [_accuracy_at(curve, budget) for curve in runs["parsed"]]
            times = mean_interval([t for t in reach if t is not None], "train_time_s")
            accuracy = mean_interval([a for a in at if a is not None], "val_accuracy")
            out.append({REGIME: regime, "dataset": dataset, "default": default, "framework": framework,
                        "n": len(runs), "target": float(target), "reached": sum(t is not None for t in reach),
                        "time_to_target": times.mean, "time_text": times_text(times, " s"),
                        "budget": float(budget), "at_budget": accuracy.mean,
                        "at_budget_text": times_text(accuracy, "", 3)})
    return pd.DataFrame(out, columns=TIMES)


def first_same_configuration_times(sources: list) -> tuple:
    """(`same_configuration_times` of the first source that has any, that source's study name); (empty, None)."""
    for source in sources:
        times = same_configuration_times(source)
        if len(times):
            return times, source.attrs.get("study")
    return pd.DataFrame(columns=TIMES), None


def _time_to(curve: list, target: float):
    elapsed = 0.0
    for point in curve:
        elapsed += point.get("seconds") or 0.0
        if point.get("val_accuracy") is not None and point["val_accuracy"] >= target - 1e-12:
            return elapsed
    return None


def _accuracy_at(curve: list, budget: float):
    elapsed, last = 0.0, None
    for point in curve:
        elapsed += point.get("seconds") or 0.0
        if elapsed > budget + 1e-9:
            break
        last = point.get("val_accuracy")
    return last


def parallel_ratios(sweep: pd.DataFrame, sources: list) -> pd.DataFrame:
    """Per framework, the sweep's train time over the same configuration's time alone (RATIOS), from the first
    source holding `sensitivity timing` runs of this sweep; empty without one."""
    name = sweep.attrs.get("study")
    for source in sources:
        if "timing" not in source or "timed_study" not in source:
            continue
        alone = trained(source)
        alone = alone[alone["timing"].eq("alone") & alone["timed_study"].eq(name)]
        if alone.empty:
            continue
        timed = sweep.set_index("number")
        out = []
        for framework, runs in alone.groupby("framework"):
            logs = [math.log(timed.loc[int(n), "train_time_s"] / t) for n, t in zip(runs["timed_trial"],
                                                                                   runs["train_time_s"])
                    if int(n) in timed.index and t and timed.loc[int(n), "train_time_s"]]
            if not logs:
                continue
            interval = mean_interval(logs, "difference")
            bounded = interval.method == "t"
            exp = (lambda x: None if x is None or not bounded else math.exp(x))
            parallel = timed.loc[[int(n) for n in runs["timed_trial"] if int(n) in timed.index], "parallel"] \
                if "parallel" in timed else pd.Series(dtype=float)
            shown = int(parallel.max()) if len(parallel.dropna()) else None
            configurations = len({int(n) for n in runs["timed_trial"] if int(n) in timed.index})
            out.append({"framework": framework, "configurations": configurations, "ratio": math.exp(interval.mean),
                        "low": exp(interval.low), "high": exp(interval.high), "parallel": shown})
        return pd.DataFrame(out, columns=RATIOS)
    return pd.DataFrame(columns=RATIOS)


def ratios_text(ratios: pd.DataFrame) -> str:
    """"; the sweep's train times ran at --parallel 2: against ..., torch 1.42x [1.30, 1.55] (3 configurations)"."""
    if ratios is None or ratios.empty:
        return ("; the sweep's train times were measured with its trials running side by side (none was timed "
                "alone: sensitivity timing SWEEP)")
    parallel = ratios["parallel"].dropna()
    how = f"at --parallel {int(parallel.max())}" if len(parallel) else "side by side"
    each = ", ".join(f"{r['framework']} {times_text((r['ratio'], r['low'], r['high']), 'x')} "
                     f"({r['configurations']} configuration{'s' if r['configurations'] != 1 else ''})"
                     for r in ratios.to_dict("records"))
    return (f"; the sweep's train times ran {how}; over the same configurations timed alone (pinned to one core), "
            f"they took {each} their time alone")


def times_text(interval, unit: str, digits: int = 2) -> str:
    """"1.42x [1.30, 1.55]", "3.10 s [2.91, 3.30]", without an interval (fewer than 3 values) "1.42x";
    `interval`: an `intervals.Interval`, or (mean, low, high)."""
    mean, low, high = (interval.mean, interval.low, interval.high) if hasattr(interval, "mean") else interval
    if hasattr(interval, "method") and interval.method != "t":
        low = high = None
    if mean is None or mean != mean:
        return "none"
    bounded = low is not None and low == low  # neither None nor NaN
    return f"{mean:.{digits}f}{unit}" + (f" [{low:.{digits}f}, {high:.{digits}f}]" if bounded else "")
