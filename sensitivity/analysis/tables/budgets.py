"""The definition of a run's published budget, and whether a run converged within it (issue 29).

A default's budget on another dataset has two honest definitions (`core.budgets.BUDGETS`): the source's epochs
(on a smaller dataset, few steps) or its optimizer steps (many passes). Each run records which (`budget`); one
written before budgets had definitions ran the source's epochs.

Convergence: a run converged where its validation accuracy (test accuracy where it recorded none) over the last
quarter of its budget stays, on average, within CONVERGENCE_DELTA of its final value: a curve still climbing
there has not converged. A cell converged where every run that trained to the end did; `None` where no run has
the 4 or more curve points the check needs.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sensitivity.analysis.table import parse_curves

BUDGET_WORDS = {"epochs": "published epochs", "steps": "published steps"}
CONVERGENCE_DELTA = 0.01  # of accuracy: the last quarter's mean against the final value
LAST_SHARE = 0.25
MIN_POINTS = 4


def budget_of(rows: pd.DataFrame) -> pd.Series:
    """Each row's budget definition, "epochs" where none is recorded."""
    if "budget" not in rows:
        return pd.Series("epochs", index=rows.index, dtype=object)
    return rows["budget"].where(rows["budget"].notna(), "epochs").astype(str)


def run_gap(curve: list):
    """The final accuracy less the mean over the last quarter of the curve's epochs, or None (too few points)."""
    field = "val_accuracy" if any(p.get("val_accuracy") is not None for p in curve) else "test_accuracy"
    points = [(p.get("epoch"), p.get(field)) for p in curve if p.get(field) is not None and p.get("epoch") is not None]
    if len(points) < MIN_POINTS:
        return None
    epochs = np.array([e for e, _ in points], float)
    values = np.array([v for _, v in points], float)
    last = values[epochs >= epochs[-1] * (1 - LAST_SHARE)]
    return float(values[-1] - last.mean())


def converged(rows: pd.DataFrame):
    """Whether every run of `rows` that trained to the end (outcome ok) converged: True, False, or None where no
    run's curve can tell."""
    ok = rows[rows["outcome"].eq("ok")] if "outcome" in rows else rows
    if ok.empty or "curve" not in ok:
        return None
    gaps = [run_gap(curve) for curve in parse_curves(ok["curve"])]
    known = [abs(g) <= CONVERGENCE_DELTA for g in gaps if g is not None]
    return None if not known else bool(all(known))


def converged_all(values) -> object:
    """True where every value is True, False where one is False, else None (unknown)."""
    values = [v for v in values]
    if any(v is False for v in values):
        return False
    return True if values and all(v is True for v in values) else None


def converged_text(value) -> str:
    return {True: "converged", False: "not converged"}.get(value, "convergence unknown")
