"""Transfer of defaults between frameworks (Liu et al. 2018): every default run on every framework and dataset,
per regime (native first); dataset transfer is a crossover of its own (`crossover`).

`transfer_matrix` gives one row per (default, target framework, target dataset, regime) with the mean
accuracy over seeds and its interval (`intervals`), train time, n, its diverged runs and their rate, both
relative to the target's own default in the same regime (ratio; 1 is as good as its own), and the budget
scale the default ran at (1: its published epochs).
`transfer_comparisons` answers "across frameworks": each default run on its home framework and on each
other framework, same dataset, regime and budget, every pair, as moved minus home (`intervals.contrast`, the
test set's sampling error included where the trials recorded per-sample correctness; accuracy over
converged runs, the diverged counted apart with Fisher's exact test). Caffe's and DLBench's defaults have no
home framework here and take no part. `plot_transfer` draws the matrix as heatmaps; every title names the
budget scale where it is below 1.
Each run records its budget's definition (`budgets`: the source's epochs, or its steps); pairs are formed within
one definition, each with `converged` (`budgets.converged`), and the matrix shows the published epochs where any
ran. `transfer_source` picks the study that ran a definition (the main job runs the steps as a study of its own).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.tables.arms import runs_of
from sensitivity.analysis.tables.budgets import budget_of, converged
from sensitivity.analysis.intervals import contrast, group_intervals, interval_text, mean_interval
from sensitivity.analysis.statistics import divergence
from sensitivity.analysis.table import REGIME, NotEnoughData, derived, regime_sorted, trained, trials_table

KEYS = ["default", "default_source", "source_dataset", "framework", "dataset", REGIME]
COMPARISON_COLUMNS = [REGIME, "question", "dataset", "framework", "default", "source_framework", "source_dataset",
                      "subject", "reference", "subject_mean", "reference_mean", "estimate", "low", "high", "p",
                      "n_a", "n_b", "sd", "se", "df", "test", "p_floor", "test_var", "method", "budget_scale",
                      "subject_text", "reference_text", "diverged_a", "runs_a", "diverged_b", "runs_b", "p_diverged",
                      "df_max", "collapsed_a", "collapsed_b"]
BUDGET_COLUMNS = ["budget", "converged_a", "converged_b", "converged", "identical"]  # the budget's definition;
# convergence; whether the two cells' runs are identical on every seed (the canonical control's runs can be)


def transfer_matrix(table) -> pd.DataFrame:
    """Computed once per table (`table.derived`): the report's findings and its transfer section share it."""
    return derived(trials_table(table), _transfer_matrix)


def _transfer_matrix(table: pd.DataFrame) -> pd.DataFrame:
    runs = _default_runs(table)
    shown = "epochs" if runs["budget"].eq("epochs").any() else "steps"  # one definition: one value a cell
    runs = runs[runs["budget"].eq(shown)]
    # runs that did not train (diverged, collapsed) are counted apart, unless none of the cell's trained (`arms`)
    converged = runs["outcome"].eq("ok").groupby([runs[k].fillna("") for k in KEYS]).transform("any")
    runs = runs.assign(accuracy=runs["accuracy"].where(runs["outcome"].eq("ok") | ~converged))
    cells = (runs.groupby(KEYS, dropna=False)
             .agg(accuracy=("accuracy", "mean"), train_time_s=("train_time_s", "mean"), n_seeds=("accuracy", "size"),
                  own=("own_default", "max"), diverged=("outcome", lambda o: int((o == "diverged").sum())),
                  collapsed=("outcome", lambda o: int((o == "collapsed").sum())), budget_scale=("budget_scale", "min"))
             .reset_index())
    cells["divergence_rate"] = cells["diverged"] / cells["n_seeds"]
    cells["collapse_rate"] = cells["collapsed"] / cells["n_seeds"]
    cells["budget"] = shown
    spread = group_intervals(runs, KEYS, "accuracy").drop(columns=["accuracy_mean", "accuracy_n"])
    cells = cells.merge(spread, on=KEYS, how="left")
    cells = _with_test_set_error(cells, runs)
    target = ["framework", "dataset", REGIME]  # the target's own default in the same regime
    own = cells[cells["own"].eq(True)][target + ["default", "accuracy", "train_time_s"]]
    own = own.rename(columns={"default": "own_default", "accuracy": "own_accuracy", "train_time_s": "own_time_s"})
    cells = cells.merge(own, on=target, how="left")
    cells["relative_accuracy"] = cells["accuracy"] / cells["own_accuracy"]
    cells["relative_time"] = cells["train_time_s"] / cells["own_time_s"]
    cells = cells.rename(columns={"framework": "target_framework", "dataset": "target_dataset",
                                  "default_source": "source_framework"}).drop(columns="own")
    return regime_sorted(cells, [REGIME, "default", "target_framework", "target_dataset"])


def _with_test_set_error(cells: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Where a cell's runs recorded per-sample correctness, its interval is for the population's accuracy: the
    test set's sampling error added to the seeds' (`intervals.contrast` of the one arm), within [0, 1]."""
    if "test_correct" not in runs or runs["test_correct"].isna().all():
        return cells
    lows, highs = cells["accuracy_low"].to_numpy(float).copy(), cells["accuracy_high"].to_numpy(float).copy()
    index = {key: i for i, key in enumerate(zip(*(cells[k] for k in KEYS)))}
    for key, part in runs.groupby(KEYS, dropna=False, sort=False):
        arm = runs_of(part, key[KEYS.index("dataset")]).arm
        if arm.correct is None or key not in index:
            continue
        interval = contrast([(1, arm)])
        if interval.low is not None and interval.method == "welch+test-set":
            lows[index[key]], highs[index[key]] = max(0.0, interval.low), min(1.0, interval.high)
    return cells.assign(accuracy_low=lows, accuracy_high=highs)


def transfer_source(sources, budget: str):
    """The study among `sources` whose framework-transfer runs at `budget` ("epochs": `richest_transfer`; "steps":
    the one with the most runs at the published steps), or None."""
    if budget == "epochs":
        try:
            return richest_transfer(sources)[0]
        except NotEnoughData:
            return None
    counts = []
    for k, source in enumerate(sources):
        try:
            runs = _default_runs(trials_table(source))
        except NotEnoughData:
            continue
        if runs["budget"].eq(budget).any():
            counts.append((int(runs["budget"].eq(budget).sum()), -k, source))
    return max(counts, key=lambda c: c[:2])[2] if counts else None


def richest_transfer(sources) -> tuple:
    """(source, its transfer matrix) of the source whose defaults span the most datasets, then frameworks,
    then cells: the study of `sensitivity transfer` rather than a sweep's few defaults on its own dataset.
    NotEnoughData (the first source's reason) when none has defaults."""
    found, reasons = [], []
    for source in sources:
        try:
            cells = transfer_matrix(source)
        except NotEnoughData as reason:
            reasons.append(str(reason))
            continue
        found.append(((cells["target_dataset"].nunique(), cells["target_framework"].nunique(), len(cells)),
                      len(found), source, cells))
    if not found:
        raise NotEnoughData(reasons[0] if reasons else "transfer needs a study")
    _, _, source, cells = max(found, key=lambda item: (item[0], -item[1]))
    return source, cells


def _default_runs(table: pd.DataFrame) -> pd.DataFrame:
    if "default" not in table or table["default"].isna().all():
        raise NotEnoughData("transfer needs the trials of sensitivity transfer (or sensitivity defaults)")
    runs = trained(table)
    runs = runs[runs["default"].notna()].copy()
    if runs.empty:
        raise NotEnoughData("transfer needs completed trials of framework defaults")
    for column in ("own_default", "default_source", "source_dataset"):
        if column not in runs:
            runs[column] = None
    # a default's trial written before budgets were recorded ran its published steps
    scales = pd.to_numeric(runs["budget_scale"], errors="coerce") if "budget_scale" in runs else np.nan
    runs["budget_scale"] = pd.Series(scales, index=runs.index).fillna(1.0)
    runs["budget"] = budget_of(runs)
    return runs


def budget_note(scales) -> str:
    """" (budget cut: each default ran 0.04 to 0.5 of its published epochs)" where a scale is below 1."""
    scales = pd.to_numeric(pd.Series(scales, dtype=object), errors="coerce").dropna()
    scales = scales[scales < 1 - 1e-6]
    if scales.empty:
        return ""
    low, high = scales.min(), scales.max()
    span = f"{low:.2g}" if math.isclose(low, high) else f"{low:.2g} to {high:.2g}"
    return f" (budget cut: each default ran {span} of its published epochs)"


def transfer_comparisons(table) -> pd.DataFrame:
    """Framework transfer, one row per pair: each default whose home framework ran here, moved to each other
    framework, against itself at home, on the same dataset and regime (COMPARISON_COLUMNS): the difference
    moved - home in test accuracy over converged runs (`intervals.contrast`, with the test set's sampling
    error where the trials recorded correctness), and each side's runs that did not train (diverged, collapsed)
    with Fisher's exact p of the two sides' rates."""
    return derived(trials_table(table), _transfer_comparisons)


def _transfer_comparisons(table: pd.DataFrame) -> pd.DataFrame:
    runs = _default_runs(table)
    frameworks = set(runs["framework"])
    out = []
    for budget, by_budget in runs.groupby("budget", sort=False):
        groups = by_budget.groupby([REGIME, "dataset", "default", "framework"], sort=True)
        cells = {key: runs_of(part, key[1]) for key, part in groups}
        settled = {key: converged(part) for key, part in groups}
        firsts = by_budget.groupby([REGIME, "dataset", "default"])[["default_source", "source_dataset"]].first()
        for (regime, dataset, default), (home, source_dataset) in firsts.iterrows():
            at_home = cells.get((regime, dataset, default, home))
            if home not in frameworks or at_home is None:
                continue  # Caffe's or DLBench's defaults have no home framework here
            for target in sorted(f for (r, d, n, f) in cells if (r, d, n) == (regime, dataset, default) and f != home):
                moved = cells[(regime, dataset, default, target)]
                row = _row(regime, dataset, target, default, home=home, source_dataset=source_dataset, moved=moved,
                           at_home=at_home)
                a, b = settled[(regime, dataset, default, target)], settled[(regime, dataset, default, home)]
                out.append({**row, "budget": budget, "converged_a": a, "converged_b": b,
                            "converged": False if False in (a, b) else (True if a is b is True else None),
                            "identical": identical(groups.get_group((regime, dataset, default, target)),
                                                   groups.get_group((regime, dataset, default, home)))})
    frame = pd.DataFrame(out, columns=COMPARISON_COLUMNS + BUDGET_COLUMNS)
    return regime_sorted(frame, [REGIME, "dataset", "default", "framework", "budget"])  # epochs before steps


def identical(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Whether two cells' runs are the same seeds with the same outcome, accuracy and per-sample correctness."""
    columns = [c for c in ("seed", "outcome", "accuracy", "test_correct") if c in a and c in b]
    if "seed" not in columns or len(a) != len(b):
        return False
    first, second = (part.sort_values("seed")[columns].reset_index(drop=True) for part in (a, b))
    return bool(first.equals(second))


def _row(regime, dataset, target, default, *, home, source_dataset, moved, at_home) -> dict:
    diff = contrast([(1, moved.arm), (-1, at_home.arm)])
    ia, ib = mean_interval(moved.arm.accuracy), mean_interval(at_home.arm.accuracy)
    return {REGIME: regime, "question": "frameworks", "dataset": dataset, "framework": target, "default": default,
            "source_framework": home, "source_dataset": source_dataset,
            "subject": f"{default} on {target}, {dataset}", "reference": f"{default} on {home}, {dataset}",
            "subject_mean": ia.mean, "reference_mean": ib.mean, "estimate": diff.estimate, "low": diff.low,
            "high": diff.high, "p": diff.p, "n_a": diff.n_a, "n_b": diff.n_b, "sd": diff.sd, "se": diff.se,
            "df": None if diff.df is None else float(diff.df), "test_var": diff.test_var, "test": diff.test,
            "p_floor": diff.p_floor, "df_max": diff.df_max,
            "method": diff.method,
            "budget_scale": float(np.nanmin([moved.budget_scale, at_home.budget_scale, np.inf])),
            "subject_text": interval_text(ia.mean, ia.low, ia.high, ia.n),
            "reference_text": interval_text(ib.mean, ib.low, ib.high, ib.n),
            "diverged_a": moved.diverged, "runs_a": moved.runs, "diverged_b": at_home.diverged,
            "runs_b": at_home.runs, "collapsed_a": moved.collapsed, "collapsed_b": at_home.collapsed,
            "p_diverged": divergence(moved.untrained, moved.runs, at_home.untrained, at_home.runs)}


def pooled_transfer(table, budget: str = "epochs") -> dict:
    """{regime: the mean over its framework-transfer pairs at the published `budget` of moved minus home, as one
    contrast of the arms (`intervals.contrast`)}. A home arm shared by several pairs enters once, with the sum of
    its weights, so its seeds' error is counted once with the covariance it gives those pairs, where pooling the
    pairs as independent comparisons would count it as independent evidence each time. Computed once per table."""
    return derived(trials_table(table), _pooled_transfers).get(budget, {})


def _pooled_transfers(table: pd.DataFrame) -> dict:
    runs = _default_runs(table)
    return {budget: _pooled_transfer(part) for budget, part in runs.groupby("budget", sort=False)}


def _pooled_transfer(runs: pd.DataFrame) -> dict:
    frameworks = set(runs["framework"])
    cells = {key: runs_of(part, key[1]) for key, part in runs.groupby([REGIME, "dataset", "default", "framework"],
                                                                      sort=True)}
    firsts = runs.groupby([REGIME, "dataset", "default"])["default_source"].first()
    pairs: dict = {}
    for (regime, dataset, default), home in firsts.items():
        at_home = cells.get((regime, dataset, default, home))
        if home not in frameworks or at_home is None or not at_home.budget_scale >= 1 - 1e-6:
            continue
        for (r, d, n, target), moved in cells.items():
            if (r, d, n) == (regime, dataset, default) and target != home and moved.budget_scale >= 1 - 1e-6:
                pairs.setdefault(regime, []).append(((r, d, n, target), (regime, dataset, default, home)))
    out = {}
    for regime, found in pairs.items():
        weights: dict = {}
        for moved, home in found:
            weights[moved] = weights.get(moved, 0.0) + 1 / len(found)
            weights[home] = weights.get(home, 0.0) - 1 / len(found)
        out[regime] = (contrast([(w, cells[key].arm) for key, w in weights.items() if abs(w) > 1e-12]), len(found))
    return out
