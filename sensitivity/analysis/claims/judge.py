"""Each comparison of the claims judged on its own: Holm's correction within each claim, regime and budget
definition (`p_holm`), so that one claim's comparisons never change another's verdict, nor the canonical control's
those of the regime it controls, the two one-sided tests within the
claim's margin (`p_tost`), a verdict and the seeds that would settle it.

A comparison is "lower" or "higher" (subject against reference) where p_holm < ALPHA, "equivalent" where the two
one-sided tests put it within the claim's margin (TOST, p < ALPHA), else "inconclusive", with `seeds_needed`: seeds
per side for 80% power to detect the margin at the claim's strictest Holm level, planned with the SD's 80% upper
confidence bound and the test set's share of the variance. The seed is the unit: every test's degrees of freedom
come from the seeds; under 3 seeds on a side, or with no spread, there is no interval and the test is an exact one
over the seeds, and a comparison whose exact test cannot reach ALPHA after Holm with its seeds is "not testable"
(`decidable`), with the seeds that could (`seeds_to_test`). A comparison of a claim judged at the published budget
whose runs were cut is "cut budget"; one whose models cannot be compared, "not compared"; a frontier, "described".
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.statistics import (ALPHA, EFFECT, MIN_FOR_INTERVAL, REGIME, holm, min_permutation_p,
                                             sd_upper, seeds_needed, tost)
from sensitivity.analysis.table import regime_position

ENTRY = Comparison.ENTRY


def judge(claims, sources: list, effect: float = EFFECT) -> pd.DataFrame:
    """Every comparison of `claims` (in their order) from `sources`, Holm-corrected within each claim and budget
    definition, with verdicts and sentences: the frame of `Comparison`'s fields (its RECORD, then `detail`)."""
    by_name = {claim.name: claim for claim in claims}
    entries = [c.entry() for claim in claims for c in claim.comparisons(sources)]
    frame = pd.DataFrame(entries, columns=ENTRY)
    # Holm's family: a claim's comparisons in one regime at one budget definition (the control is never in the
    # family of what it controls)
    frame["family"] = frame["claim"] + "|" + frame[REGIME] + "|" + frame["budget"].fillna("").astype(str)
    frame["anchor"] = frame["claim"].map({name: claim.anchor for name, claim in by_name.items()})
    frame["counted"] = frame["compared"] & frame["role"].eq("comparison") & ~_cut(frame, by_name)
    frame["p_holm"] = None
    frame["p_tost"] = [tost(e, se, by_name[c].margin(effect, d), df) if ok else None for e, se, c, df, ok, d in zip(
        frame["estimate"], frame["se"], frame["claim"], frame["df"], frame["compared"], frame["detail"])]
    for family, part in frame[frame["counted"]].groupby("family"):
        frame.loc[part.index, "p_holm"] = pd.Series(holm([none_if_missing(p) for p in part["p"]]), index=part.index,
                                                    dtype=object)
    tests = frame[frame["p_holm"].notna()].groupby("family").size().to_dict()
    frame["verdict"] = [_verdict(row, by_name[row["claim"]], tests.get(row["family"], 1))
                        for row in frame.to_dict("records")]
    needed, observed = [], []
    for row in frame.to_dict("records"):
        alpha = ALPHA / max(1, tests.get(row["family"], 1))
        if row["verdict"] == "not testable":
            needed.append(seeds_to_test(row["test"], alpha))
            observed.append(None)
            continue
        sd = sd_upper(row["sd"], max(1, row["n_a"] + row["n_b"] - 2)) if row["verdict"] == "inconclusive" else None
        margin = by_name[row["claim"]].margin(effect, row["detail"])
        test_var = none_if_missing(row["test_var"]) or 0.0
        needed.append(seeds_needed(margin, sd, alpha, test_var=test_var) if sd is not None else None)
        size = abs(row["estimate"]) if row["estimate"] == row["estimate"] else 0.0
        observed.append(seeds_needed(size, sd, alpha, test_var=test_var) if sd is not None and size > margin else None)
    frame["seeds_needed"] = pd.array(needed, dtype="Int64")
    frame["seeds_for_observed"] = pd.array(observed, dtype="Int64")
    frame["sentence"] = [sentences.comparison(row, by_name[row["claim"]].margin(effect, row["detail"]),
                                              by_name[row["claim"]]) for row in frame.to_dict("records")]
    order = frame[REGIME].map(regime_position) * 10 + frame["claim"].map(list(by_name).index)
    frame = frame.assign(order=order).sort_values("order", kind="stable", ignore_index=True)
    frame = frame[[*Comparison.RECORD, "detail"]]
    frame.attrs["effect"] = effect
    return frame


def decidable(row: dict, tests: int = 1) -> bool:
    """Whether the comparison's seeds can decide it: it has a test, and an exact test's smallest attainable p,
    Holm-adjusted in a family of `tests`, lies below ALPHA (a sign-flip test over 5 paired seeds cannot go below
    0.0625; a permutation test of 5 against 5, 0.0079)."""
    if (row.get("test") or "none") == "none":
        return False
    floor = none_if_missing(row.get("p_floor"))
    return floor is None or floor * max(1, tests) < ALPHA


def seeds_to_test(test: str, alpha: float) -> int:
    """The fewest seeds a side with which the test can go below `alpha`: the exact tests' floors, 2 / 2^n
    (sign-flip) and 2 / C(2n, n) (permutation); a t test from MIN_FOR_INTERVAL seeds."""
    for n in range(MIN_FOR_INTERVAL, 64):
        floor = (2 / 2 ** n if test == "exact sign-flip" else
                 min_permutation_p(n, n) if test == "exact permutation" else 0.0)
        if floor < alpha:
            return n
    return 64


def _cut(frame: pd.DataFrame, by_name: dict) -> pd.Series:
    """Comparisons of a claim judged at the published budget whose runs were cut below it."""
    scale = pd.to_numeric(frame["budget_scale"], errors="coerce")
    return frame["claim"].isin([name for name, claim in by_name.items() if claim.budgeted]) & scale.lt(1 - 1e-6)


def _verdict(row: dict, claim, tests: int = 1) -> str:
    if not row["compared"]:
        return "not compared"
    if row["unit"] == "frontier":
        return "described"
    if claim.budgeted and none_if_missing(row["budget_scale"]) is not None and row["budget_scale"] < 1 - 1e-6:
        return "cut budget"
    if not decidable(row, tests):
        return "not testable"
    if none_if_missing(row["p_holm"]) is not None and row["p_holm"] < ALPHA:
        return "lower" if row["estimate"] < 0 else "higher"
    if row["role"] == "placebo" and none_if_missing(row["p"]) is not None and row["p"] < ALPHA:
        return "lower" if row["estimate"] < 0 else "higher"
    if none_if_missing(row["p_tost"]) is not None and row["p_tost"] < ALPHA:
        return "equivalent"
    return "inconclusive"
