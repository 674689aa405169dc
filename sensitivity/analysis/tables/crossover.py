"""Dataset transfer as Liu et al. define it: a crossover. "Tuned for A does not work on B" means that on B the
configuration tuned for A loses to B's own tuned one, and on A the reverse.

A crossover (the trials of `sensitivity crossover`, marked `crossover`) runs, on one framework and regime, the
configuration tuned for dataset A and the one tuned for B, each on both datasets, every run at its own
budget. Its effect is the home advantage

    H = (A-tuned on A - B-tuned on A) + (B-tuned on B - A-tuned on B)

in accuracy, with its 95% interval (`intervals.contrast`: the seeds' error and, where the trials recorded
per-sample correctness, each test set's sampling error), over converged runs. Divergence is a result apart, never
an accuracy: on each dataset (a `side`) the visiting configuration's divergence is compared with the home one's
(Fisher's exact test), and the side's accuracy difference (home minus visitor) is computed over converged runs
where both of its cells have some. H is summed only where both sides have accuracies; otherwise the row's
estimate is the one side that has (`summed` False, `carried_by` names its dataset) and the other side's evidence
is its divergence. Runtime is reported beside
it in the same way: the geometric mean, over the two datasets, of the train time of the configuration tuned
for the dataset against the other's (`time_ratio`, above 1: the home configuration is the slower one), over
converged runs. A crossover between two
disjoint halves of one dataset is a placebo: no home advantage can exist there, so it must come out equivalent
to 0; when both halves' tuned configurations are the same it is vacuous.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.tables.arms import runs_of
from sensitivity.analysis.tables.budgets import budget_of, converged, converged_all
from sensitivity.analysis.intervals import Arm, contrast, interval_text, mean_interval
from sensitivity.analysis.statistics import divergence
from sensitivity.analysis.table import REGIME, NotEnoughData, derived, regime_sorted, trained, trials_table

COLUMNS = [REGIME, "crossover", "framework", "model", "dataset_a", "dataset_b", "placebo", "vacuous", "config_a",
           "config_b", "estimate", "low", "high", "p", "se", "df", "test", "p_floor", "test_var", "sd", "method", "n_a",
           "n_b",
           "budget_scale", "time_ratio", "time_low", "time_high", "cells", "diverged", "divergence", "sides", "summed",
           "carried_by", "df_max", "budget", "converged"]
NEEDS = ("dataset transfer needs a crossover: sensitivity crossover --framework F --datasets A,B (a published default "
         "or --tuned DATASET=SWEEP_STUDY for each side)")


def crossover_comparisons(table) -> pd.DataFrame:
    """One row per crossover (COLUMNS): its home advantage with interval, the runtime beside it, and `cells`,
    the four means ({"A-tuned on A": text, ...}); computed once per table."""
    return derived(trials_table(table), _crossovers)


def _crossovers(table: pd.DataFrame) -> pd.DataFrame:
    if "crossover" not in table or table["crossover"].isna().all():
        raise NotEnoughData(NEEDS)
    rows = trained(table)
    rows = rows[rows["crossover"].notna()]
    rows = rows.assign(budget=budget_of(rows))
    out = []
    for (regime, name, budget), part in rows.groupby([REGIME, "crossover", "budget"], sort=True):
        row = _one(regime, name, part)
        if row is not None:
            cells = [converged(part[part["tuned_for"].eq(t) & part["dataset"].eq(on)])
                     for t in part["tuned_for"].unique() for on in part["dataset"].unique()]
            out.append({**row, "budget": budget, "converged": converged_all(cells)})
    if not out:
        raise NotEnoughData("the crossover's trials have not finished: " + NEEDS)
    return regime_sorted(pd.DataFrame(out, columns=COLUMNS), [REGIME, "placebo", "crossover", "budget"])


def _one(regime: str, name: str, part: pd.DataFrame):
    """The crossover's row, or None while one of its four cells has no trained run."""
    datasets = list(dict.fromkeys(part.sort_values("number")["tuned_for"]))
    if len(datasets) != 2:
        return None
    a, b = datasets
    cells = {}
    for tuned in (a, b):
        for on in (a, b):
            rows = part[part["tuned_for"].eq(tuned) & part["dataset"].eq(on)]
            if rows.empty:
                return None
            cells[(tuned, on)] = runs_of(rows, on)
    sides = [_side(cells, on, visitor=b if on == a else a) for on in (a, b)]
    measured = [side for side in sides if side["estimate"] is not None]
    summed = len(measured) == 2
    if summed:
        accuracy = contrast([(1, cells[(a, a)].arm), (-1, cells[(b, a)].arm), (1, cells[(b, b)].arm),
                             (-1, cells[(a, b)].arm)])
    elif measured:  # one side only: its accuracy difference, the other side's evidence is its divergence
        on = measured[0]["dataset"]
        accuracy = contrast([(1, cells[(on, on)].arm), (-1, cells[(b if on == a else a, on)].arm)])
    else:
        accuracy = contrast([])
    logs = {key: Arm(np.log(runs.train_time_s[runs.train_time_s > 0]), None, key[1]) for key, runs in cells.items()}
    time = contrast([(0.5, logs[(a, a)]), (-0.5, logs[(b, a)]), (0.5, logs[(b, b)]), (-0.5, logs[(a, b)])])
    # over converged runs: a run that diverged stopped early, and its time says nothing of the configuration
    labels = {tuned: _first(part, tuned, "tuned_config") for tuned in (a, b)}
    keys = {tuned: _first(part, tuned, "tuned_key") for tuned in (a, b)}
    placebo = bool(part["placebo"].eq(True).any()) if "placebo" in part else False
    exp = (lambda x: None if x is None or x != x else float(math.exp(x)))
    models = ", ".join(sorted(set(part["env_model"].dropna()))) if "env_model" in part else ""
    return {REGIME: regime, "crossover": name, "framework": part["framework"].iloc[0], "model": models, "dataset_a": a,
            "dataset_b": b, "placebo": placebo, "vacuous": placebo and keys[a] is not None and keys[a] == keys[b],
            "config_a": labels[a], "config_b": labels[b], "estimate": accuracy.estimate, "low": accuracy.low,
            "high": accuracy.high, "p": accuracy.p, "se": accuracy.se, "df": accuracy.df, "test": accuracy.test,
            "p_floor": accuracy.p_floor, "df_max": accuracy.df_max,
            "test_var": accuracy.test_var, "sd": accuracy.sd, "method": accuracy.method, "n_a": accuracy.n_a,
            "n_b": accuracy.n_b, "budget_scale": float(np.nanmin([c.budget_scale for c in cells.values()] + [np.inf])),
            "time_ratio": exp(time.estimate), "time_low": exp(time.low), "time_high": exp(time.high),
            "cells": {f"tuned for {tuned} on {on}": _cell_text(runs) for (tuned, on), runs in cells.items()},
            "diverged": {f"tuned for {tuned} on {on}": f"{runs.diverged} of {runs.runs}"
                         + (f" (and {runs.collapsed} collapsed)" if runs.collapsed else "")
                         for (tuned, on), runs in cells.items()},
            "divergence": [_divergence(cells, on, home=on, visitor=b if on == a else a) for on in (a, b)
                           if cells[(on, on)].untrained or cells[(b if on == a else a, on)].untrained],
            "sides": sides, "summed": summed,
            "carried_by": None if summed or not measured else measured[0]["dataset"]}


def _side(cells: dict, on: str, visitor: str) -> dict:
    """Dataset `on`: the home configuration against the visitor there, accuracy over converged runs (None where
    a cell has none) and its runs that did not train (diverged, collapsed) by Fisher's exact test."""
    home, away = cells[(on, on)], cells[(visitor, on)]
    out = {"dataset": on, "visitor": visitor, "home_diverged": home.diverged, "home_runs": home.runs,
           "visitor_diverged": away.diverged, "visitor_runs": away.runs, "home_collapsed": home.collapsed,
           "visitor_collapsed": away.collapsed,
           "p_diverged": divergence(away.untrained, away.runs, home.untrained, home.runs),
           "estimate": None, "low": None, "high": None, "p": None, "test": "none"}
    if home.all_diverged or away.all_diverged:
        return out
    diff = contrast([(1, home.arm), (-1, away.arm)])
    return {**out, "estimate": diff.estimate, "low": diff.low, "high": diff.high, "p": diff.p, "test": diff.test}


def _divergence(cells: dict, on: str, home: str, visitor: str) -> dict:
    """On dataset `on`, the visiting configuration's runs that did not train (diverged, collapsed) against the
    home one's, by Fisher's test."""
    mine, theirs = cells[(home, on)], cells[(visitor, on)]
    return {"dataset": on, "visitor": visitor, "visitor_diverged": theirs.diverged, "visitor_runs": theirs.runs,
            "home_diverged": mine.diverged, "home_runs": mine.runs, "visitor_collapsed": theirs.collapsed,
            "home_collapsed": mine.collapsed,
            "p": divergence(theirs.untrained, theirs.runs, mine.untrained, mine.runs),
            "all_diverged": [name for name, runs in ((visitor, theirs), (home, mine)) if runs.all_diverged]}


def _first(part: pd.DataFrame, tuned: str, column: str):
    values = part.loc[part["tuned_for"].eq(tuned), column].dropna() if column in part else pd.Series([], dtype=object)
    return values.iloc[0] if len(values) else None


def _cell_text(runs) -> str:
    interval = mean_interval(runs.arm.accuracy)
    accuracy = interval_text(interval.mean, interval.low, interval.high, interval.n)
    if runs.all_diverged:
        return f"{accuracy}, every run diverged" if not runs.collapsed else f"{accuracy}, no run trained"
    return f"{accuracy}, {float(np.mean(runs.train_time_s)):.1f} s"

