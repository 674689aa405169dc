"""What every claim is and speaks: the `Claim` protocol, the `Comparison` a claim rests on and the `Verdict` it
reaches, whose `record()`s are what `sensitivity findings --json` prints.

A claim (one module of this room, one line of `registry.CLAIMS`) gathers its comparisons from the studies in hand
(`comparisons`), prepares once what its verdict reads beside them (`context`: pooled arms, attack checks, timing),
and reaches a verdict per regime from its comparisons after `judge` has tested each one (`verdict`). Its words are
its own (`comparison_words`, and the sentences its verdict writes); the statistics are `analysis.statistics`'.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Optional, Protocol

import numpy as np
import pandas as pd



def none_if_missing(value):
    """None for a missing value (None, pandas' NA, NaN), else the value."""
    return None if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def plain(value):
    """A JSON-ready value: NaN and pandas' NA as None, numpy scalars as Python's."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if isinstance(value, np.generic) else value


@dataclass
class Comparison:
    """One comparison a claim rests on: subject against reference in a regime, its difference with interval and
    test over seeds, its budget, and its own record (`detail`). `judge` fills the fields after `compared`."""
    semantics: str  # the regime (REGIME)
    claim: str
    role: str  # "comparison" (counted), "placebo" or "beside" (reported beside the claim)
    label: str
    subject: str
    reference: str
    estimate: float
    low: Optional[float]
    high: Optional[float]
    unit: str
    p: Optional[float]
    n_a: int
    n_b: int
    sd: Optional[float] = None
    se: Optional[float] = None
    df: Optional[float] = None
    test: str = "none"  # "welch", "paired t", "exact permutation", "exact sign-flip", "none"
    p_floor: Optional[float] = None  # the smallest p the test can reach with these seeds
    df_max: Optional[float] = None
    test_var: Optional[float] = None  # the test set's share of the estimate's variance
    budget_scale: Optional[float] = None
    budget: Optional[str] = None  # the definition of the published budget: "epochs" or "steps"
    converged: Optional[bool] = None
    compared: bool = True
    detail: Any = None
    # filled by `judge`
    verdict: str = ""
    p_holm: Optional[float] = None
    p_tost: Optional[float] = None
    seeds_needed: Optional[int] = None
    seeds_for_observed: Optional[int] = None
    anchor: str = ""
    sentence: str = ""

    RECORD = ("semantics", "claim", "role", "label", "subject", "reference", "verdict", "estimate", "low", "high",
              "unit", "p", "p_holm", "p_tost", "test", "df", "df_max", "p_floor", "n_a", "n_b", "seeds_needed",
              "seeds_for_observed", "budget_scale", "budget", "converged", "anchor", "sentence")
    ENTRY = ("semantics", "claim", "role", "label", "subject", "reference", "estimate", "low", "high", "unit", "p",
             "n_a", "n_b", "sd", "se", "df", "test", "p_floor", "df_max", "test_var", "budget_scale", "budget",
             "converged", "compared", "detail")

    @classmethod
    def of(cls, diff: dict, *, regime: str, claim: str, label: str, subject: str, reference: str, unit: str,
           budget=None, compared: bool = True, detail=None, role: str = "comparison", definition=None,
           settled=None) -> "Comparison":
        """A comparison from a difference `diff` (a dict of `intervals.Difference`'s fields); `budget` is its
        budget scale, `definition` its budget's definition and `settled` whether its runs converged (True, False,
        None: unknown)."""
        return cls(regime, claim, role, label, subject, reference, diff["estimate"],
                   *(none_if_missing(diff.get(k)) for k in ("low", "high")), unit, none_if_missing(diff.get("p")),
                   int(diff["n_a"]), int(diff["n_b"]),
                   **{k: none_if_missing(diff.get(k)) for k in ("sd", "se", "df", "p_floor", "df_max", "test_var")},
                   test=diff.get("test") or "none", budget_scale=none_if_missing(budget), budget=definition,
                   converged=settled, compared=compared, detail=detail)

    def entry(self) -> dict:
        """The comparison's fields up to `detail`, as `judge` reads them (its record shallow, not copied)."""
        return {name: getattr(self, name) for name in self.ENTRY}

    def record(self) -> dict:
        """The comparison as `findings --json` prints it."""
        return {name: plain(getattr(self, name)) for name in self.RECORD}


@dataclass
class Verdict:
    """A claim's verdict in one regime: its effect with interval and test, the seeds and trials behind it, its
    budget definitions, its control, its one-line headline and its sentence."""
    semantics: str
    claim: str
    verdict: str = "not tested"
    estimate: float = math.nan
    low: Optional[float] = None
    high: Optional[float] = None
    unit: str = ""
    p: Optional[float] = None
    p_holm: Optional[float] = None
    p_tost: Optional[float] = None
    margin: Optional[float] = None
    n_a: int = 0
    n_b: int = 0
    n_trials: int = 0
    n_comparisons: int = 0
    n_tested: int = 0
    n_differ: int = 0
    budget_scale: Optional[float] = None
    seeds_needed: Optional[int] = None
    budgets: Optional[str] = None
    by_budget: Optional[dict] = None
    table: Optional[list] = None  # one row per subject compared (framework transfer: per default and target)
    kernel_warning: Optional[str] = None
    control: Optional[str] = None
    anchor: str = ""
    headline: str = ""
    sentence: str = ""
    note: str = field(default="", repr=False)  # added to the sentence after the kernel warning (not recorded)

    @classmethod
    def columns(cls) -> list:
        return [f.name for f in fields(cls) if f.name != "note"]

    def record(self) -> dict:
        """The verdict as `findings --json` prints it."""
        return {name: plain(value) for name, value in asdict(self).items() if name != "note"}


class Claim(Protocol):
    """One claim of the benchmarks (see the module)."""
    name: str  # its key in the Findings: "framework transfer"
    statement: str  # what the benchmark claims: "defaults do not transfer across frameworks"
    question: str  # "whether defaults transfer across frameworks"
    would_test: str  # the command that would test it where nothing in the studies does
    anchor: str  # the report section that draws its figure
    unit: str  # its comparisons' difference, as the findings figure's axis names it
    budgeted: bool  # judged at the published budget only: a comparison cut below it is "cut budget"

    def margin(self, effect: float, detail=None) -> float:
        """Its margin of equivalence for a stated effect (`statistics.margin_of`)."""

    def comparisons(self, sources: list) -> list:
        """Its `Comparison`s from the trial tables `sources` (the main study first)."""

    def context(self, sources: list) -> Any:
        """What its verdict reads beside its comparisons, computed once a Findings."""

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context: Any) -> dict:
        """Its verdict's fields in `regime` from its judged comparisons there (`rows`) and in every regime."""

    def comparison_words(self, row: dict) -> tuple:
        """What a comparison's sentence says beyond its numbers and beyond its verdict, for this claim: a pair of
        texts, each "" for nothing."""



class DesignClaim(Protocol):
    """A claim of a designed study (`sweep --design`), judged from its indices (`rankings.designed.importance_record`)
    instead of comparisons of trials; `findings` prints these under their own key ("sensitivity")."""
    name: str
    statement: str
    question: str
    would_test: str
    anchor: str

    def verdicts(self, record: dict, size: str, grow: str) -> list:
        """Its verdicts as {claim, subject, verdict, headline, details}; `size` names the design, `grow` the command
        that enlarges it."""
