"""What every ranking of the parameters is: one `Evaluator` interface (after Optuna's `importance/_base.py`) whose
`evaluate` returns one `Ranking`: each parameter's value by the evaluator's index with its interval, the
bootstrap replicates behind the intervals, the other indices the evaluator gives beside it (S1 beside ST, sigma
beside mu*), its interactions, and whether the ranking is settled or why not (`verdict`).

A ranking is settled where its top parameter leads in at least LEAD_SHARE of the bootstrap resamples and its
interval lies above the second's (`settled`). fANOVA and PED-ANOVA (`importance`) rank a study's trials; Sobol'
and Morris (`indices`) rank a design's points; a new evaluator is one subclass and its module.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import NamedTuple, Optional

import numpy as np

LEAD_SHARE = 0.90  # a settled ranking's top factor leads in at least this share of resamples


class Estimate(NamedTuple):
    """An index and its interval."""
    value: float
    low: float
    high: float


class Verdict(NamedTuple):
    settled: bool
    top: str
    second: Optional[str]
    lead: float  # the share of resamples in which `top` ranks first
    separated: bool  # top's interval lies above the second's
    why: str


@dataclass(frozen=True)
class Ranking:
    """The parameters ranked by one evaluator's index."""
    names: tuple  # the parameters, in the evaluator's order
    estimates: tuple  # Estimate of the ranking index, per parameter
    replicates: np.ndarray = field(repr=False)  # the index over bootstrap resamples: resamples x parameters
    index: str = ""  # the ranking index: "ST", "mu*", "fANOVA", "PED-ANOVA"
    others: dict = field(default_factory=dict)  # {index: values per parameter} given beside it: "S1", "sigma", "mu"
    interactions: dict = field(default_factory=dict)  # {(a, b): Estimate}: second-order indices, where given
    size: int = 0  # what the intervals rest on: base rows, trajectories or trials

    def verdict(self, lead_share: float = LEAD_SHARE) -> Verdict:
        return settled(self, lead_share)


def settled(ranking: Ranking, lead_share: float = LEAD_SHARE) -> Verdict:
    """Whether a ranking is settled: its top factor leads in at least `lead_share` of the bootstrap resamples and
    its interval lies above the second's; `why` says."""
    names, estimates = list(ranking.names), list(ranking.estimates)
    order = sorted(range(len(names)), key=lambda j: -estimates[j].value)
    top = order[0]
    if len(names) == 1:
        return Verdict(True, names[top], None, 1.0, True, f"{names[top]} is the only factor")
    second = order[1]
    replicates = np.asarray(ranking.replicates, dtype=float)
    lead = float(np.mean(np.argmax(replicates, axis=1) == top)) if len(replicates) else 0.0
    separated = estimates[top].low > estimates[second].high
    ok = lead >= lead_share and separated
    a, b = names[top], names[second]
    if ok:
        why = f"{a} leads in {lead:.0%} of resamples, and its interval lies above {b}'s"
    else:
        reasons = ([f"{a} leads in only {lead:.0%} of resamples (needs {lead_share:.0%})"] if lead < lead_share
                   else []) + ([f"{a}'s interval overlaps {b}'s"] if not separated else [])
        why = "; ".join(reasons)
    return Verdict(ok, a, b, lead, separated, why)


class Evaluator(ABC):
    """One way of ranking the parameters; `evaluate` returns its `Ranking`."""
    name: str  # its key: "fanova", "ped_anova", "sobol", "morris"
    label: str  # as the report names it: "fANOVA"
    measures: str  # what its index measures, in a sentence

    @abstractmethod
    def evaluate(self, sample, params=None, *, seed: int = 0) -> Ranking:
        """The ranking of `params` (every parameter where None) on `sample`: the trials of a study (fANOVA,
        PED-ANOVA) or a design's points and their values (Sobol', Morris)."""
