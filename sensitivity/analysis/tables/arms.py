"""A configuration's runs as one side of a comparison: the accuracies of its converged runs, their per-sample
correctness where recorded, and its runs that did not train (diverged or collapsed: `table.UNTRAINED`), a result
of their own (a chance-level accuracy would make the sample bimodal, so accuracy is compared over converged runs
only, and the untrained runs by Fisher's exact test). Where no run of a configuration trained, its accuracy is
that of the models they left (chance level, as they are), and `all_diverged` says so: the configuration does not
train there."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.intervals import Arm
from sensitivity.analysis.table import UNTRAINED
from sensitivity.core.correctness import unpack


class Runs(NamedTuple):
    arm: Arm  # converged runs
    diverged: int
    runs: int  # every run that ran to a result: converged, diverged and collapsed
    budget_scale: float  # the least budget scale of the runs (NaN: not a default's budget)
    train_time_s: np.ndarray  # of the converged runs (none where no run trained)
    all_diverged: bool = False  # no run trained (each diverged or collapsed)
    collapsed: int = 0

    @property
    def untrained(self) -> int:
        """Runs that did not train, diverged or collapsed: what the exact tests count."""
        return self.diverged + self.collapsed


def runs_of(rows: pd.DataFrame, test_set: str) -> Runs:
    """The Runs of trial-table rows (trained trials of one configuration on one test set)."""
    untrained = rows["outcome"].isin(UNTRAINED)
    converged = rows[rows["outcome"].eq("ok")]
    every = converged.empty and bool(untrained.any())
    if every:
        converged = rows[untrained]
    accuracy = converged["accuracy"].to_numpy(float)
    keep = np.isfinite(accuracy)
    correct = None
    if "test_correct" in converged and len(converged):
        vectors = [unpack(text) for text in converged["test_correct"][keep]]
        if vectors and all(v is not None for v in vectors) and len({len(v) for v in vectors}) == 1:
            correct = np.vstack(vectors)
    scales = pd.to_numeric(rows["budget_scale"], errors="coerce") if "budget_scale" in rows else pd.Series([np.nan])
    times = converged["train_time_s"].to_numpy(float)[keep] if not every else np.array([])
    return Runs(Arm(accuracy[keep], correct, test_set), int(rows["outcome"].eq("diverged").sum()), len(rows),
                float(scales.min()) if scales.notna().any() else np.nan, times[np.isfinite(times)], every,
                int(rows["outcome"].eq("collapsed").sum()))
