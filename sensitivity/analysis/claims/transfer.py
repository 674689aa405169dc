"""A transfer claim's verdict (dataset transfer, framework transfer) from its comparisons at the published
budget (see `findings`): the summary of its comparisons, or for framework transfer the pairs pooled as one
contrast of their arms (`transfer.pooled_transfer`), judged against the margin, the placebo and the control, at
each definition of the published budget, then combined (`budget_verdicts`)."""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.budget_verdicts import combine
from sensitivity.analysis.tables.budgets import BUDGETS, budget_of
from sensitivity.analysis.intervals import Difference, Summary, summary
from sensitivity.analysis.statistics import tost
from sensitivity.analysis.claims.comparisons import none_if_missing
from sensitivity.analysis.table import REGIME
from sensitivity.analysis.tables.transfer import pooled_transfer, transfer_source

ALPHA = 0.05
QUESTIONS = sentences.QUESTIONS


def margin_of(claim: str, effect: float, detail=None) -> float:
    """The claim's margin of equivalence: `effect` a dataset (a home advantage sums two differences, unless a
    crossover's `detail` says it is one side alone)."""
    one_side = isinstance(detail, dict) and detail.get("summed") in (False,)
    return 2 * effect if claim == "dataset transfer" and not one_side else effect



def pooled_transfers(sources: list) -> dict:
    """{budget: {regime: (Difference, pairs)}}: framework transfer's pairs pooled as one contrast of their arms
    (`transfer.pooled_transfer`), at each budget definition of the study that ran it (`transfer_source`)."""
    out = {}
    for budget in BUDGETS:
        source = transfer_source(sources, budget)
        if source is not None:
            out[budget] = pooled_transfer(source, budget)
    return out


def transfer_claim(regime: str, claim: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                   arms=None) -> dict:
    """A transfer claim's entry: its verdict at each budget definition (`at_budget`) combined
    (`budget_verdicts.combine`); `arms` {budget: {regime: pooled arms}} (`pooled_transfers`)."""
    kinds, every_kinds = budget_of(rows), budget_of(every_regime)
    results = {budget: at_budget(regime, claim, rows[kinds.eq(budget)], every_regime[every_kinds.eq(budget)],
                                 effect, (arms or {}).get(budget))
               for budget in BUDGETS if kinds.eq(budget).any()}
    if not results or all(r["verdict"] == "not tested" for r in results.values()) and "epochs" in results:
        return at_budget(regime, claim, rows, every_regime, effect, {})
    return combine(regime, claim, results, rows)



def at_budget(regime: str, claim: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
              arms=None) -> dict:
    """A transfer claim's verdict from the summary of its comparisons at one published budget; for framework
    transfer, `arms`: {regime: (the pairs' mean as one contrast of their arms, pairs)}, which counts a shared
    arm once."""
    margin = margin_of(claim, effect)
    compared = rows[rows["role"].eq("comparison") & rows["verdict"].ne("not compared")]
    placebo = rows[rows["role"].eq("placebo")]
    counted = compared[compared["verdict"].ne("cut budget")]
    scales = pd.to_numeric(compared["budget_scale"], errors="coerce").dropna()
    facts = {"budget_scale": float(scales.min()) if len(scales) else None, "n_tested": len(counted),
             "n_trials": int((counted["n_a"] + counted["n_b"]).sum())}
    if compared.empty:
        return {**facts, "verdict": "not tested",
                "sentence": sentences.untested(regime, claim).rstrip(".") + sentences.placebo(placebo, margin) + "."}
    if counted.empty:
        return {**facts, "verdict": "not tested", "sentence": sentences.cut(regime, claim, facts["budget_scale"])}
    pooled, df = summary([_difference(row) for row in counted.to_dict("records")]), None
    if (arms or {}).get(regime) is not None and arms[regime][0].se is not None:
        pooled, df = _as_summary(arms[regime], counted), arms[regime][0].df
    undecided = _not_testable(regime, claim, counted, pooled, facts)
    if undecided:
        return undecided
    p_tost = tost(pooled.estimate, pooled.se, margin, df)
    claimed = pooled.estimate > 0 if claim == "dataset transfer" else pooled.estimate < 0
    differ = counted[counted["verdict"].isin(("lower", "higher"))]
    against = differ["verdict"].eq("higher" if claim == "dataset transfer" else "lower").any()
    if p_tost is not None and p_tost < ALPHA:
        # equivalent on average; where a comparison differs in the claimed direction, it depends on which
        verdict = "inconclusive" if against else "not supported"
    elif pooled.p is not None and pooled.p < ALPHA and claimed:
        verdict = "supported"
    else:
        verdict = "inconclusive"
    failed_placebo = placebo["verdict"].isin(("lower", "higher")).any()
    if verdict == "supported" and failed_placebo:
        verdict = "inconclusive"  # the design finds an effect where none can exist: it cannot be trusted here
    head = counted.loc[(counted["estimate"].idxmax() if claim == "dataset transfer" else counted["estimate"].idxmin())]
    control = every_regime[every_regime["role"].eq("comparison") & every_regime[REGIME].eq("canonical")
                           & every_regime["verdict"].isin(("lower", "higher", "equivalent", "inconclusive"))]
    control_summary = summary([_difference(r) for r in control.to_dict("records")]) if (
        regime != "canonical" and claim == "framework transfer" and len(control)) else None
    if control_summary is not None and (arms or {}).get("canonical") is not None \
            and arms["canonical"][0].se is not None:
        control_summary = _as_summary(arms["canonical"], control)
    sentence = sentences.transfer_claim(regime, claim, verdict, pooled, p_tost, margin, counted, differ, head.to_dict(),
                                        placebo, control_summary, mixed=bool(p_tost is not None and p_tost < ALPHA
                                                                             and against))
    if control_summary is not None and control_summary.k:
        low = "" if control_summary.low is None else (f" [{control_summary.low:+.3f}, "
                                                       f"{control_summary.high:+.3f}]")
        control = f"canonical control {control_summary.estimate:+.3f}{low}"
    else:
        control = "the control regime" if regime == "canonical" else None
    return {**facts, "verdict": verdict, "estimate": pooled.estimate, "low": pooled.low, "high": pooled.high,
            "control": control,
            "unit": _unit(head), "p": pooled.p, "p_tost": p_tost,
            "n_a": int(counted["n_a"].min()),
            "n_b": int(counted["n_b"].min()), "n_differ": len(differ),
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None, "sentence": sentence}


def _not_testable(regime: str, claim: str, counted: pd.DataFrame, pooled, facts: dict):
    """The claim's entry where its seeds cannot decide it: no comparison with an interval and one or more
    "not testable" (an exact test whose floor lies above the Holm level, or none); else None."""
    if pooled.k or not counted["verdict"].eq("not testable").any():
        return None
    n = int(counted[["n_a", "n_b"]].min().min())
    needed = pd.to_numeric(counted["seeds_needed"], errors="coerce").max()
    needed = None if needed != needed else int(needed)
    about = f" (about {needed} needed)" if needed is not None else ""
    return {**facts, "verdict": "not testable", "estimate": float(counted["estimate"].mean()), "n_a": n, "n_b": n,
            "unit": counted["unit"].iloc[0], "seeds_needed": needed,
            "sentence": f"{regime.capitalize()}: {QUESTIONS[claim]} is not testable with {n} seeds{about}: no "
                        f"comparison's seeds can reach p < {ALPHA:g} after Holm ("
                        + "; ".join(counted["sentence"]) + ")."}


def _unit(head) -> str:
    """The claim's unit: a crossover of one side names it."""
    detail = head["detail"] if isinstance(head.get("detail"), dict) else {}
    if detail.get("summed") in (False,) and detail.get("carried_by"):
        return f"accuracy on {detail['carried_by']} alone (the other side diverged: no home advantage summed)"
    return head["unit"]


def _as_summary(arms: tuple, counted: pd.DataFrame) -> Summary:
    """A contrast of arms (`transfer.pooled_transfer`) as a claim's summary: tau is the pairs' own spread."""
    diff, pairs = arms
    spread = float(pd.to_numeric(counted["estimate"], errors="coerce").std(ddof=1)) if len(counted) > 1 else 0.0
    return Summary(diff.estimate, diff.low, diff.high, diff.se, diff.p, pairs, spread)


def _difference(row: dict) -> Difference:
    detail = row["detail"] or {}
    return Difference(row["estimate"], row["low"], row["high"], row["n_a"], row["n_b"], row["p"], None, "",
                      none_if_missing(detail.get("se")), none_if_missing(detail.get("df")))

