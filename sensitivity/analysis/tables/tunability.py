"""How much a default leaves on the table, per default and knob, with seeds as the unit (a study of
`sensitivity tunability`; the plan is `sweep.tunability`'s).

Selection (phase "selection"): each grid point's mean validation accuracy over the selection seeds; each role's
configuration is the best among the points it may choose from (ties go to the default's own point, then the
grid's order):
- "tuned": every knob tuned, the whole grid;
- "K alone": knob K tuned, every other at the default's value (Probst et al.'s tunability of K);
- "all but K": every knob tuned but K, which stays at the default's value; the tuning risk of K (Weerts et al.)
  is "tuned" minus this.
Estimates (phase "fresh"): each chosen configuration and the default ran on the same fresh seeds, disjoint from
the selection's; the estimate is the mean over those seeds of test accuracy, chosen minus default (for a tuning
risk, tuned minus all but K), paired by seed (`intervals.paired`: Student t on n - 1 degrees of freedom). It is
the gain of the configuration this search selected, conditional on the selection, not the best the grid holds. A
run that did not train counts at the accuracy it left: it is what that configuration gives. The noise floor is
the 95% half-width of a difference between two independent sets of k seeds of the default,
t(0.975, 2k - 2) x s x sqrt(2 / k): two identical reruns on the same seed would have no spread at all.
"""
from __future__ import annotations

import json
import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.intervals import paired
from sensitivity.analysis.statistics import REGIME, t_quantile
from sensitivity.analysis.table import NotEnoughData, derived, trained, trials_table

KEYS = [REGIME, "dataset", "tunability", "framework"]
NEEDS = "tunability needs the trials of sensitivity tunability"
COLUMNS = [*KEYS, "role", "knob", "kind", "knobs", "point", "home", "note", "val_score", "grid_points",
           "selection_seeds", "fresh_seeds", "estimate", "low", "high", "p", "se", "sd", "df", "df_max", "test",
           "p_floor", "n_a", "n_b", "method", "subject_mean", "reference_mean", "noise_floor", "same_as_reference",
           "budget", "budget_scale"]


class Selection(NamedTuple):
    role: str  # "tuned", "K alone", "all but K"
    knob: str  # K ("" for "tuned")
    point: dict  # the grid point chosen
    val_score: float  # its mean validation accuracy over the selection seeds


def tunability_runs(table) -> pd.DataFrame:
    """The trained runs of a tunability study (NotEnoughData without any), with `point` and `home` as text."""
    table = trials_table(table)
    if "tunability" not in table or table["tunability"].isna().all():
        raise NotEnoughData(NEEDS)
    runs = trained(table)
    runs = runs[runs["tunability"].notna()]
    if runs.empty:
        raise NotEnoughData(NEEDS + " that finished")
    return runs


def _selections(part: pd.DataFrame) -> list:
    """The roles' choices among one default's selection runs (see the module)."""
    home = json.loads(part["grid_home"].iloc[0])
    knobs = list(home)
    scores = part.groupby("grid_point", sort=False)["val_accuracy"].mean()
    points = {key: json.loads(key) for key in scores.index}
    order = sorted(scores.index, key=lambda key: (points[key] != home,))  # the default's own first on a tie

    def best(allowed) -> tuple:
        keys = [k for k in order if allowed(points[k]) and np.isfinite(scores[k])]
        if not keys:
            return None
        chosen = max(keys, key=lambda k: scores[k])  # max keeps the first of equals: the default's own
        return points[chosen], float(scores[chosen])

    roles = [("tuned", "", lambda p: True)]
    for knob in knobs:
        roles.append((f"{knob} alone", knob, lambda p, k=knob: all(p[o] == home[o] for o in knobs if o != k)))
    if len(knobs) > 1:
        for knob in knobs:
            roles.append((f"all but {knob}", knob, lambda p, k=knob: p[k] == home[k]))
    found = []
    for role, knob, allowed in roles:
        chosen = best(allowed)
        if chosen is not None:
            found.append(Selection(role, knob, *chosen))
    return found


def selections(table) -> dict:
    """{(regime, dataset, default, framework): ([Selection], its selection runs)} of a tunability study; computed
    once per table."""
    return derived(trials_table(table), _selections_by_default)


def _selections_by_default(table: pd.DataFrame) -> dict:
    runs = tunability_runs(table)
    runs = runs[runs["phase"].eq("selection")]
    return {key: (_selections(part), part) for key, part in runs.groupby(KEYS, sort=False)}


def tunability_rows(table) -> pd.DataFrame:
    """One row per default (regime, dataset, default, framework) and role (COLUMNS): the chosen point, its
    validation score, and its fresh-seed gain over the default with its interval; computed once per table."""
    return derived(trials_table(table), _tunability_rows)


def _tunability_rows(table: pd.DataFrame) -> pd.DataFrame:
    runs = tunability_runs(table)
    chosen = selections(table)
    fresh = runs[runs["phase"].eq("fresh")]
    out = []
    for key, part in fresh.groupby(KEYS, sort=False):
        if key not in chosen:
            continue
        by_point = {point: rows.set_index("seed")["accuracy"] for point, rows in part.groupby("grid_point")}
        home = part["grid_home"].iloc[0]
        if home not in by_point:
            continue
        picked, selection = chosen[key]
        default = by_point[home]
        k = len(default)
        sd = float(default.std(ddof=1)) if k > 1 else math.nan
        floor = float(t_quantile(0.975, 2 * k - 2)) * sd * math.sqrt(2 / k) if k > 1 else math.nan
        picks = {s.role: s for s in picked}
        base = dict(zip(KEYS, key), home=home, knobs=", ".join(json.loads(home)),
                    grid_points=int(selection["grid_point"].nunique()),
                    selection_seeds=int(selection["seed"].nunique()), fresh_seeds=k, noise_floor=floor,
                    budget=part["budget"].iloc[0] if "budget" in part else "epochs",
                    budget_scale=float(pd.to_numeric(part.get("budget_scale"), errors="coerce").min())
                    if "budget_scale" in part else 1.0)
        for s in picked:
            subject = json.dumps(s.point, sort_keys=True)
            if s.role.startswith("all but "):
                kind, against = "risk", json.dumps(picks["tuned"].point, sort_keys=True)
                subject, reference = against, subject  # tuned minus all but K
            else:
                kind, reference = "gain", home
            if subject not in by_point or reference not in by_point:
                continue  # the fresh phase has not run it (yet)
            a, b = by_point[subject].align(by_point[reference], join="inner")
            diff = paired(a.to_numpy(), b.to_numpy())
            out.append({**base, "role": s.role if kind == "gain" else f"tuning risk of {s.knob}", "knob": s.knob,
                        "kind": kind, "point": json.dumps(s.point, sort_keys=True), "val_score": s.val_score,
                        "estimate": diff.estimate, "low": diff.low, "high": diff.high, "p": diff.p, "se": diff.se,
                        "sd": diff.sd, "df": diff.df, "df_max": diff.df_max, "test": diff.test,
                        "p_floor": diff.p_floor, "n_a": diff.n_a, "n_b": diff.n_b, "method": diff.method,
                        "subject_mean": float(a.mean()), "reference_mean": float(b.mean()),
                        "same_as_reference": subject == reference,
                        "note": "the search selected the default itself" if subject == reference and kind == "gain"
                        else "the two selections are the same configuration" if subject == reference else ""})
    if not out:
        raise NotEnoughData(NEEDS + ", both phases (a run stopped after the selection resumes with the same "
                                    "command)")
    return pd.DataFrame(out, columns=COLUMNS)


def point_text(point) -> str:
    """A grid point as "lr=0.001, optimizer=adam"."""
    point = json.loads(point) if isinstance(point, str) else point
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(point.items()))
