"""The comparisons each claim of the findings rests on, gathered from the studies in hand (`findings` judges
them): one entry per comparison with its difference, interval, test, seeds, budget and its own record
(`detail`). Crossovers (dataset transfer and its placebo), framework-transfer pairs, robustness pairs, and
the runtime frontier of the main study with its best configurations."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from sensitivity.analysis.tables.budgets import BUDGET_WORDS, BUDGETS
from sensitivity.analysis.tables.crossover import crossover_comparisons
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.intervals import difference, ratio
from sensitivity.analysis.tables.robustness_pairs import robustness_comparisons
from sensitivity.analysis.tables.seeds import best_configurations
from sensitivity.analysis.table import REGIME, NotEnoughData, trained
from sensitivity.analysis.tables.transfer import transfer_comparisons, transfer_source

TRANSFER = ("dataset transfer", "framework transfer")
ENTRY = [REGIME, "claim", "role", "label", "subject", "reference", "estimate", "low", "high", "unit", "p", "n_a",
         "n_b", "sd", "se", "df", "test", "p_floor", "df_max", "test_var", "budget_scale", "budget", "converged",
         "compared", "detail"]


def gather(sources: list) -> list:
    """Every comparison of the claims, from `sources` (the main study first: its frontier)."""
    return (_crossover_entries(sources) + _transfer_entries(sources) + _robustness_entries(sources)
            + _tradeoff_entries(sources[0], sources[1:]))


def none_if_missing(value):
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def _entry(regime, claim, label, subject, reference, diff, unit, budget=None, compared=True, detail=None,
           role="comparison", definition=None, settled=None) -> dict:
    """A comparison's entry; `budget` is its budget scale, `definition` its budget's definition (transfer claims:
    "epochs" or "steps") and `settled` whether its runs converged (True, False, None: unknown)."""
    return {REGIME: regime, "claim": claim, "role": role, "label": label, "subject": subject, "reference": reference,
            "estimate": diff["estimate"], "unit": unit, "n_a": int(diff["n_a"]), "n_b": int(diff["n_b"]),
            **{k: none_if_missing(diff.get(k))
               for k in ("low", "high", "p", "sd", "se", "df", "test_var", "p_floor", "df_max")},
            "test": diff.get("test") or "none",
            "budget_scale": none_if_missing(budget), "budget": definition, "converged": settled,
            "compared": compared, "detail": detail}


def _crossover_entries(sources: list) -> list:
    out = []
    for source in sources:
        try:
            rows = crossover_comparisons(source)
        except NotEnoughData:
            continue
        for row in rows.to_dict("records"):
            kind = "placebo" if row["placebo"] else "comparison"
            label = (f"{'placebo, ' if row['placebo'] else ''}{row['framework']}: {row['dataset_a']} x "
                     f"{row['dataset_b']}" + (f" ({row['model']})" if row.get("model") else "")
                     + ("" if row["budget"] == "epochs" else f", {BUDGET_WORDS.get(row['budget'], row['budget'])}"))
            out.append(_entry(row[REGIME], "dataset transfer", label, row["config_a"], row["config_b"], row,
                              "home advantage", row["budget_scale"], detail=row, role=kind, definition=row["budget"],
                              settled=row["converged"]))
    return out


def _transfer_entries(sources: list) -> list:
    """Framework transfer's pairs under each budget definition, each from the study that ran the most of them
    (`transfer.transfer_source`: the main job runs the published steps as a study of its own)."""
    out = []
    for budget in BUDGETS:
        source = transfer_source(sources, budget)
        if source is None:
            continue
        for row in transfer_comparisons(source).to_dict("records"):
            if row["budget"] != budget:
                continue
            label = (f"{row['dataset']}: {row['source_framework']}'s {row['default']} on {row['framework']} vs at "
                     f"home" + ("" if budget == "epochs" else f", {BUDGET_WORDS[budget]}"))
            out.append(_entry(row[REGIME], "framework transfer", label, row["subject"], row["reference"], row,
                              "accuracy", row["budget_scale"], detail=row, definition=budget,
                              settled=row["converged"]))
    return out


def _robustness_entries(sources: list) -> list:
    """Every pair of frameworks of the first study with robustness records (`robustness_pairs`): the claim's own
    comparisons (matched clean accuracy, transfer attacks, each framework's own default) and, beside them, the
    same pairs white-box and as trained, and the same configuration on every framework."""

    for source in sources:
        rows = robustness_comparisons(source)
        if rows.empty:
            continue
        out = []
        for row in rows.to_dict("records"):
            what = {"own": "own defaults", "all": "all models"}.get(row["set_kind"], row["default"])
            state = "matched" if row["role"] == "matched" else "as trained"
            label = (f"{row['dataset']}, {what}, {state}, {row['attack'].upper()} {row['kind']}: "
                     f"{row['framework_a']} vs {row['framework_b']}")
            diff = {**row, "test_var": None}
            out.append(_entry(row[REGIME], "robustness", label, row["framework_a"], row["framework_b"], diff,
                              "robust AUC", compared=bool(row["comparable"]) and row["method"] != "no examples",
                              detail=row, role="comparison" if row["primary"] else "beside"))
        return out
    return []


FIXED_COST_FLOOR_S = 2.0  # a mean train time below this is dominated by fixed costs (timers, first steps)


def alone_times(sweep: pd.DataFrame, sources: list) -> dict:
    """{trial number of the sweep: its train time when run again alone} from `sensitivity timing` runs of the
    sweep among `sources` (marked `timing: alone`, `timed_trial`); {} without them."""
    name, out = sweep.attrs.get("study"), {}
    for source in sources:
        if not {"timing", "timed_study", "timed_trial"} <= set(source.columns):
            continue
        runs = trained(source)
        runs = runs[runs["timing"].eq("alone") & runs["timed_study"].eq(name) & runs["outcome"].eq("ok")]
        for number, seconds in zip(runs["timed_trial"], runs["train_time_s"]):
            if number == number and seconds == seconds and seconds > 0:
                out.setdefault(int(number), []).append(float(seconds))
    return {n: float(np.median(t)) for n, t in out.items()}


def _times(runs: pd.DataFrame, alone: dict) -> tuple:
    """(train times, "alone" or "contended"): the times alone of the runs that were timed alone (`sensitivity
    timing` times one seed of a configuration), else the sweep's."""
    timed = [alone[int(n)] for n in runs["number"] if int(n) in alone] if "number" in runs else []
    if timed:
        return np.array(timed, float), "alone"
    return runs["train_time_s"].to_numpy(float), "contended"


def _tradeoff_entries(table: pd.DataFrame, others=()) -> list:
    try:
        frontier = runtime_accuracy_frontier(table)
        best = best_configurations(table[table["outcome"].eq("ok")], ("framework", REGIME))
    except NotEnoughData:
        return []
    rows, out = trained(table), []
    for regime, chosen in best.groupby(REGIME, sort=False):
        front = frontier.points[frontier.points["on_frontier"] & frontier.points[REGIME].eq(regime)]
        counts = front["framework"].value_counts()
        fastest = front.sort_values("train_time_s")["framework"].iloc[0] if len(front) else None
        on = ", ".join(f"{fw} ({k} point{'s' if k != 1 else ''})" for fw, k in counts.items())
        none = {"estimate": np.nan, "low": None, "high": None, "p": None, "n_a": len(front), "n_b": 0, "sd": None}
        out.append(_entry(regime, "runtime-accuracy", "frontier", on, "", none, "frontier",
                          detail={"frontier": counts.to_dict(), "fastest": fastest,
                                  "n_trials": int(rows[REGIME].eq(regime).sum())}))
        # over converged runs (a diverged seed would make the sample bimodal); the diverged are counted beside
        every = {fw: rows[rows[REGIME].eq(regime) & rows["framework"].eq(fw) & rows["config_id"].eq(cid)]
                 for fw, cid in zip(chosen["framework"], chosen["best_config_id"])}
        seeds = {fw: runs[runs["outcome"].eq("ok")] for fw, runs in every.items()}
        if len(seeds) < 2:
            continue
        chooser = "val_accuracy" if rows["val_accuracy"].notna().any() else "accuracy"
        top = max(seeds, key=lambda fw: seeds[fw][chooser].mean())
        alone = alone_times(table, others)
        for other in sorted(fw for fw in seeds if fw != top):
            a, b = seeds[top], seeds[other]
            (time_a, kind_a), (time_b, kind_b) = _times(a, alone), _times(b, alone)
            timed = "alone" if kind_a == kind_b == "alone" else "contended"
            if timed == "contended":
                time_a, time_b = a["train_time_s"].to_numpy(float), b["train_time_s"].to_numpy(float)
            diff, cost = difference(a["accuracy"], b["accuracy"]), ratio(time_a, time_b)
            out.append(_entry(regime, "runtime-accuracy", f"best of {top} vs best of {other}", top, other,
                              diff.__dict__, "accuracy", detail={
                                  "time_ratio": cost.estimate, "time_low": cost.low, "time_high": cost.high,
                                  "fastest": fastest, "accuracy_a": a["accuracy"].mean(),
                                  "accuracy_b": b["accuracy"].mean(), "chooser": chooser,
                                  "chosen_a": a[chooser].mean(), "chosen_b": b[chooser].mean(),
                                  "diverged_a": int(len(every[top]) - len(a)),
                                  "diverged_b": int(len(every[other]) - len(b)), "time_a": float(np.mean(time_a)),
                                  "time_b": float(np.mean(time_b)), "timed": timed,
                                  "fixed_cost_dominated": bool(min(np.mean(time_a), np.mean(time_b))
                                                               < FIXED_COST_FLOOR_S),
                                  "fixed_cost_floor_s": FIXED_COST_FLOOR_S}))
    return out
