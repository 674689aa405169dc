"""Dataset transfer's verdict (`dataset_transfer`) at each definition of the published budget, then combined
(`budget_verdicts`): the random-effects summary of its crossovers, judged against the margin and the placebo. The
claim object gives its name, words and margin; its own words on what the verdict rests on are its `pooled_words`.

At one definition: "not supported" where the summary is equivalent to 0 within the margin (TOST) and no crossover
differs in the claimed direction (where one does, the answer depends on the crossover: "inconclusive"),
"supported" where it lies above 0 (p < ALPHA) and the placebo, if any, shows nothing, else "inconclusive". It is
tested on runs at the published budget only: a comparison whose runs were cut (budget_scale < 1) is "cut budget",
and a claim with nothing else is "not tested at the published budget".
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import none_if_missing
from sensitivity.analysis.claims.budget_verdicts import combine
from sensitivity.analysis.claims.sentences import numbers, signed
from sensitivity.analysis.intervals import Difference, summary
from sensitivity.analysis.statistics import ALPHA, tost
from sensitivity.analysis.tables.budgets import budget_of
from sensitivity.core.budgets import BUDGETS


def transfer_claim(claim, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float) -> dict:
    """The claim's entry: its verdict at each budget definition (`at_budget`) combined (`budget_verdicts.combine`)."""
    kinds = budget_of(rows)
    results = {budget: at_budget(claim, regime, rows[kinds.eq(budget)], effect)
               for budget in BUDGETS if kinds.eq(budget).any()}
    if not results or all(r["verdict"] == "not tested" for r in results.values()) and "epochs" in results:
        return at_budget(claim, regime, rows, effect)
    return combine(claim, regime, results, rows)


def at_budget(claim, regime: str, rows: pd.DataFrame, effect: float) -> dict:
    """The claim's verdict from the summary of its comparisons at one published budget."""
    margin = claim.margin(effect)
    compared = rows[rows["role"].eq("comparison") & rows["verdict"].ne("not compared")]
    placebo = rows[rows["role"].eq("placebo")]
    counted = compared[compared["verdict"].ne("cut budget")]
    scales = pd.to_numeric(compared["budget_scale"], errors="coerce").dropna()
    facts = {"budget_scale": float(scales.min()) if len(scales) else None, "n_tested": len(counted),
             "n_trials": int((counted["n_a"] + counted["n_b"]).sum())}
    if compared.empty:
        return {**facts, "verdict": "not tested",
                "sentence": sentences.untested(claim, regime).rstrip(".") + placebo_words(placebo, margin) + "."}
    if counted.empty:
        return {**facts, "verdict": "not tested", "sentence": sentences.cut(claim, regime, facts["budget_scale"])}
    pooled, df = summary([_difference(row) for row in counted.to_dict("records")]), None
    undecided = _not_testable(claim, regime, counted, pooled, facts)
    if undecided:
        return undecided
    p_tost = tost(pooled.estimate, pooled.se, margin, df)
    claimed = pooled.estimate > 0  # a home advantage
    differ = counted[counted["verdict"].isin(("lower", "higher"))]
    against = differ["verdict"].eq("higher").any()
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
    head = counted.loc[counted["estimate"].idxmax()]
    sentence = claim_sentence(claim, regime, verdict, pooled=pooled, p_tost=p_tost, margin=margin, counted=counted,
                              differ=differ, head=head.to_dict(), placebos=placebo,
                              mixed=bool(p_tost is not None and p_tost < ALPHA and against))
    control = "the control regime" if regime == "canonical" else None
    return {**facts, "verdict": verdict, "estimate": pooled.estimate, "low": pooled.low, "high": pooled.high,
            "control": control,
            "unit": _unit(head), "p": pooled.p, "p_tost": p_tost,
            "n_a": int(counted["n_a"].min()),
            "n_b": int(counted["n_b"].min()), "n_differ": len(differ),
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None, "sentence": sentence}


def _not_testable(claim, regime: str, counted: pd.DataFrame, pooled, facts: dict):
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
            "sentence": f"{regime.capitalize()}: {claim.question} is not testable with {n} seeds{about}: no "
                        f"comparison's seeds can reach p < {ALPHA:g} after Holm ("
                        + "; ".join(counted["sentence"]) + ")."}


def _unit(head) -> str:
    """The claim's unit: a crossover of one side names it."""
    detail = head["detail"] if isinstance(head.get("detail"), dict) else {}
    if detail.get("summed") in (False,) and detail.get("carried_by"):
        return f"accuracy on {detail['carried_by']} alone (the other side diverged: no home advantage summed)"
    return head["unit"]


def _difference(row: dict) -> Difference:
    detail = row["detail"] or {}
    return Difference(row["estimate"], row["low"], row["high"], row["n_a"], row["n_b"], row["p"], None, "",
                      none_if_missing(detail.get("se")), none_if_missing(detail.get("df")))



def pooled_text(pooled, margin: float, p_tost, how: str = "random-effects mean") -> str:
    """A claim's pooled difference with its interval, spread, p and equivalence test."""
    if pooled.low is None:
        return f"{signed(pooled.estimate)} (no interval)"
    spread = f"; between-comparison SD {pooled.tau:.3f}" if pooled.k > 1 else ""
    tost_text = f", equivalence within +-{margin:g}: TOST p={p_tost:.2g}" if p_tost is not None and p_tost < 0.5 else ""
    return (f"{signed(pooled.estimate)} [{signed(pooled.low)}, {signed(pooled.high)}] (95% interval"
            f"{', ' + how + ' of ' + str(pooled.k) if pooled.k > 1 else ''}{spread}; p={pooled.p:.2g}{tost_text})")


def claim_sentence(claim, regime: str, verdict: str, *, pooled, p_tost, margin: float, counted, differ, head: dict,
                   placebos, mixed: bool = False) -> str:
    """A transfer claim's sentence: its verdict, what it rests on (the claim's `pooled_words`), the seeds that would
    settle it, and the placebo."""
    lead = {"supported": f"{claim.statement} here", "not supported": f"defaults transfer within +-{margin:g} here",
            "inconclusive": f"not settled {claim.question}"}[verdict]
    if mixed:
        lead = (f"{claim.question} depends on the comparison: on average within +-{margin:g}, but "
                f"{len(differ)} of {len(counted)} differ after Holm")
    fewest, most = int(counted[["n_a", "n_b"]].min().min()), int(counted[["n_a", "n_b"]].max().max())
    seeds = f"{fewest} seeds a cell" if fewest == most else f"{fewest} to {most} seeds a cell"
    what = claim.pooled_words(regime, pooled, p_tost=p_tost, margin=margin, counted=counted, differ=differ, head=head,
                              seeds=seeds)
    ending = f"; {sentences.needed(head, margin)}" if verdict == "inconclusive" and not mixed else ""
    return f"{regime.capitalize()}: {lead}: {what}{ending}{placebo_words(placebos, margin)}."


def placebo_words(rows, margin: float) -> str:
    """". Placebo (...): its home advantage and what it shows", or "" without one."""
    if rows is None or rows.empty:
        return ""
    row = rows.iloc[0].to_dict()
    tost_text = f" (TOST p={row['p_tost']:.2g})" if none_if_missing(row.get("p_tost")) is not None else ""
    state = {"equivalent": f"no home advantage within +-{margin:g}{tost_text}, as it must be",
             "lower": "a home advantage where none can exist: the design is not to be trusted here",
             "higher": "a home advantage where none can exist: the design is not to be trusted here",
             "inconclusive": "not shown equivalent to 0 (too few seeds or test samples)",
             "cut budget": "cut below its budget"}.get(row["verdict"], row["verdict"])
    if row["detail"].get("vacuous"):
        state += "; vacuous: both halves' tuned configurations are the same"
    held = " (so the claim is not called supported)" if row["verdict"] in ("lower", "higher") else ""
    return f". Placebo ({row['label']}): {numbers(row)}: {state}{held}"
