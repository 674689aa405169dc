"""Claim "defaults do not transfer across frameworks" (Liu et al. 2018): each default on each other framework
against itself on its home framework, same dataset, regime and budget (`tables.transfer.transfer_comparisons`),
every pair; the canonical regime is the control. The verdict is the transfer claims' (`claims.transfer`), on the
pairs pooled as one contrast of their arms (a home arm shared by pairs counted once), at each definition of the
published budget; where an ablation study walked from one set-up to another, the knob of its largest step is named.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import transfer
from sensitivity.analysis.claims.base import Comparison
from sensitivity.analysis.claims.sentences import numbers
from sensitivity.analysis.statistics import margin_of
from sensitivity.analysis.table import NotEnoughData
from sensitivity.analysis.tables.ablation import ablation_path
from sensitivity.analysis.tables.budgets import BUDGET_WORDS
from sensitivity.analysis.tables.transfer import pooled_transfer, transfer_comparisons, transfer_source
from sensitivity.core.budgets import BUDGETS

SHARED_ARMS = "mean, as one contrast of the arms (a home arm shared by pairs counted once),"


class FrameworkTransfer:
    name = "framework transfer"
    statement = "defaults do not transfer across frameworks"
    question = "whether defaults transfer across frameworks"
    would_test = "sensitivity transfer on two or more frameworks"
    anchor = "transfer"
    unit = "moved default minus at home (accuracy)"
    budgeted = True
    direction = "lower"  # the comparisons' verdict that the claim claims
    quotes_control = True  # its native verdict quotes the canonical control on the same pairs

    def margin(self, effect: float, detail=None) -> float:
        return margin_of(self.name, effect, detail)

    def comparisons(self, sources: list) -> list:
        """The pairs under each budget definition, each from the study that ran the most of them
        (`transfer.transfer_source`: the main job runs the published steps as a study of its own)."""
        out = []
        for budget in BUDGETS:
            source = transfer_source(sources, budget)
            if source is None:
                continue
            for row in transfer_comparisons(source).to_dict("records"):
                if row["budget"] != budget:
                    continue
                label = (f"{row['dataset']}: {row['source_framework']}'s {row['default']} on {row['framework']} vs "
                         f"at home" + ("" if budget == "epochs" else f", {BUDGET_WORDS[budget]}"))
                out.append(Comparison.of(row, regime=row["semantics"], claim=self.name, label=label,
                                         subject=row["subject"], reference=row["reference"], unit="accuracy",
                                         budget=row["budget_scale"], detail=row, definition=budget,
                                         settled=row["converged"]))
        return out

    def context(self, sources: list) -> dict:
        """{"arms": {budget: {regime: (Difference, pairs)}}: the pairs pooled as one contrast of their arms at each
        budget definition of the study that ran it; "ablation": the ablation's largest step ("" without one)}."""
        arms = {}
        for budget in BUDGETS:
            source = transfer_source(sources, budget)
            if source is not None:
                arms[budget] = pooled_transfer(source, budget)
        return {"arms": arms, "ablation": ablation_note(sources)}

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context: dict) -> dict:
        found = transfer.transfer_claim(self, regime, rows, every_regime, effect, context["arms"])
        if regime == "native" and found["verdict"] != "not tested" and context["ablation"]:
            found["note"] = context["ablation"]  # the knob that carries the largest native difference
        return found

    def comparison_words(self, row: dict) -> tuple:
        return "", ""

    def pooled_words(self, regime: str, pooled, *, p_tost, margin: float, counted, differ, head: dict, control,
                     seeds: str) -> str:
        """What the claim's verdict rests on: the pairs' pooled difference, how many differ, the largest loss and
        the canonical control."""
        defaults = counted["label"].str.extract(r"'s (\S+) on")[0].nunique()
        what = (f"over {len(counted)} pairs ({defaults} default{'s' if defaults != 1 else ''} each moved from its home "
                f"framework to another, at the published budget (budget scale 1.0), {seeds}), moved minus at home: "
                f"{transfer.pooled_text(pooled, margin, p_tost, SHARED_ARMS)}; {len(differ)} of {len(counted)} pairs "
                f"differ after Holm; the "
                f"largest loss, {head['label']}: {numbers(head)}")
        if control is not None and control.k:
            what += (f"; the canonical control (the same formulas in every framework): "
                     f"{transfer.pooled_text(control, margin, None, SHARED_ARMS)}")
        if regime == "canonical":
            what += "; this is the control regime: with the same formulas, what remains is numerics"
        return what

    def budget_key(self, detail: dict) -> tuple:
        """What makes a pair the same at the other definition of the budget."""
        return detail.get("dataset"), detail.get("default"), detail.get("framework")

    def rerun_command(self, regime: str, details: list, seeds: int, budget: str) -> str:
        """The command that runs the pairs of `details` at `budget`."""
        tail = f"--seeds {seeds} --semantics {regime} --budget {budget}"
        if not details:
            return f"sensitivity transfer --datasets DATASET {tail}"
        datasets = sorted({d["dataset"] for d in details})
        defaults = sorted({d["default"] for d in details})
        frameworks = sorted({d["source_framework"] for d in details} | {d["framework"] for d in details})
        return (f"sensitivity transfer --frameworks {','.join(frameworks)} --datasets {','.join(datasets)} "
                f"--defaults {','.join(defaults)} {tail}")


def ablation_note(sources: list) -> str:
    """"; the ablation from tensorflow native to mxnet native (study S) puts the largest step at init: ..."."""
    for source in sources:
        if len((source.attrs.get("ablation") or {}).get("steps") or ()) < 2:
            continue
        try:
            path = ablation_path(source)
        except (NotEnoughData, KeyError, IndexError):  # a record this code did not write: no attribution
            continue
        steps = path.rows[path.rows["step"] > 0].dropna(subset=["delta"])
        if steps.empty:
            continue
        largest = steps.loc[steps["delta"].abs().idxmax()]
        return (f"; the ablation from {path.source} to {path.target} (study "
                f"{source.attrs.get('study')}, {path.seeds} seeds a point) puts the largest step at "
                f"{largest['change']} ({largest['delta']:+.3f} validation accuracy)")
    return ""
