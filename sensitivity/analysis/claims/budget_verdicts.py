"""A transfer claim's verdict under both definitions of the published budget (issue 29): the source's epochs and
its optimizer steps (`budgets`).

Each definition's verdict is computed on its own comparisons (`transfer_claim`). The claim is "supported" only
where it holds under both, on converged runs; where one definition carries it, the claim is "inconclusive" and
its sentence says which ("holds at the published epochs, vanishes at the published steps"). A definition that was
not run says "not run at the published steps", with the command that runs it; one that ran only some of the
comparisons names those left out, with the command that runs them. `by_budget` holds, for each definition, its
verdict, estimate, interval, seeds and `converged`, or `not_run` with the command.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims.base import none_if_missing
from sensitivity.analysis.tables.budgets import BUDGET_WORDS, budget_of, converged_all, converged_text
from sensitivity.core.budgets import BUDGETS

JUDGED = ("lower", "higher", "equivalent", "inconclusive", "not testable")


def combine(claim, regime: str, results: dict, rows: pd.DataFrame) -> dict:
    """The entry of `claim` (a transfer claim) from `results` {budget: its entry at that definition} (one at least),
    its comparisons `rows` of every definition."""
    kinds = budget_of(rows)
    compared = rows[rows["role"].eq("comparison") & rows["verdict"].isin(JUDGED)]
    by_budget = {}
    for budget in BUDGETS:
        if budget not in results:
            by_budget[budget] = {"not_run": command(claim, regime, compared[kinds[compared.index].ne(budget)],
                                                    budget)}
            continue
        found = results[budget]
        mine = compared[kinds[compared.index].eq(budget)]
        by_budget[budget] = {"verdict": found["verdict"], "estimate": none_if_missing(found.get("estimate")),
                             "low": none_if_missing(found.get("low")), "high": none_if_missing(found.get("high")),
                             "p": none_if_missing(found.get("p")), "n_a": found.get("n_a"), "n_b": found.get("n_b"),
                             "n_tested": found.get("n_tested"), "converged": converged_all(list(mine["converged"]))}
    left = _left_out(claim, compared, kinds) if len(results) == 2 else []
    if left:
        by_budget["steps"]["left_out"] = [label for label, _ in left]
        by_budget["steps"]["left_out_command"] = command(claim, regime, pd.DataFrame([r for _, r in left]), "steps")
    verdict, phrase = _verdict(results, by_budget)
    base = dict(results.get("epochs") or results["steps"])
    sentence = f"{regime.capitalize()}, by budget: {phrase}. " + " ".join(
        f"At the {BUDGET_WORDS[b]}: {str(results[b].get('sentence') or '').rstrip('.')}." for b in BUDGETS
        if b in results)
    sentence = sentence.rstrip(".")
    for budget, record in by_budget.items():
        if "not_run" in record:
            sentence += f"; not run at the {BUDGET_WORDS[budget]} (to run it: {record['not_run']})"
        elif record.get("left_out"):
            sentence += (f"; at the {BUDGET_WORDS[budget]}, {len(record['left_out'])} comparisons were left out ("
                         f"{'; '.join(record['left_out'])}; to run them: {record['left_out_command']})")
    return {**base, "verdict": verdict, "budgets": budgets_text(by_budget), "by_budget": by_budget,
            "sentence": sentence + "."}


def budgets_text(by_budget: dict) -> str:
    """"at epochs: supported, not converged; at steps: not run" for the headline (the published epochs and steps;
    "at steps (4 of 12 run)" where some comparisons were left out)."""
    parts = []
    for budget, record in by_budget.items():
        if "not_run" in record:
            parts.append(f"at {budget}: not run")
        else:
            some = (f" ({record['n_tested']} of {record['n_tested'] + len(record['left_out'])} run)"
                    if record.get("left_out") else "")
            parts.append(f"at {budget}{some}: {record['verdict']}, {converged_text(record['converged'])}")
    return "; ".join(parts)


def _verdict(results: dict, by_budget: dict) -> tuple:
    """(the claim's verdict, the phrase that says which definition carries it)."""
    if len(results) == 1:
        (budget, found), = results.items()
        other = next(b for b in BUDGETS if b != budget)
        if found["verdict"] == "supported":
            return "inconclusive", (f"holds at the {BUDGET_WORDS[budget]}, not run at the {BUDGET_WORDS[other]}: "
                                    "supported needs both")
        return found["verdict"], f"{found['verdict']} at the {BUDGET_WORDS[budget]} alone"
    epochs, steps = results["epochs"]["verdict"], results["steps"]["verdict"]
    settled = [by_budget[b]["converged"] for b in BUDGETS]
    if epochs == steps == "supported":
        if all(s is True for s in settled):
            return "supported", "holds at both the published epochs and the published steps, on converged runs"
        return "inconclusive", ("holds at both definitions, but not on converged runs ("
                                + ", ".join(f"{b} {converged_text(s)}" for b, s in zip(BUDGETS, settled)) + ")")
    if "supported" in (epochs, steps):
        carried, other = ("epochs", "steps") if epochs == "supported" else ("steps", "epochs")
        gone = "vanishes" if results[other]["verdict"] == "not supported" else "is not settled"
        return "inconclusive", f"holds at the {BUDGET_WORDS[carried]}, {gone} at the {BUDGET_WORDS[other]}"
    if epochs == steps:
        return epochs, f"{epochs} at both the published epochs and the published steps"
    return "inconclusive", f"{epochs} at the published epochs, {steps} at the published steps"


def _left_out(claim, compared: pd.DataFrame, kinds: pd.Series) -> list:
    """[(label, row)] of the comparisons run at the published epochs with no twin at the published steps."""
    steps = {_key(claim, r) for _, r in compared[kinds[compared.index].eq("steps")].iterrows()}
    return [(r["label"], r) for _, r in compared[kinds[compared.index].eq("epochs")].iterrows()
            if _key(claim, r) not in steps]


def _key(claim, row) -> tuple:
    return claim.budget_key(row["detail"] if isinstance(row.get("detail"), dict) else {})


def command(claim, regime: str, rows: pd.DataFrame, budget: str) -> str:
    """The command that runs `rows`' comparisons (those of the other definition) at `budget`."""
    details = [r for r in rows["detail"] if isinstance(r, dict)] if len(rows) else []
    seeds = max([int(r["n_a"]) for _, r in rows.iterrows()] or [5])
    return claim.rerun_command(regime, details, seeds, budget)
