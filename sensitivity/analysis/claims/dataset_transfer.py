"""Claim "defaults do not transfer across datasets" (Liu et al. 2018), tested by crossovers
(`tables.crossover`): on one framework, the configurations tuned for datasets A and B each run on both; the effect
is the home advantage, summed over the two datasets. A crossover between two halves of one dataset is the placebo:
it is reported beside the claim, never in it, and one that shows an effect keeps the claim from "supported". The
verdict is the transfer claims' (`claims.transfer`), at each definition of the published budget.
"""
from __future__ import annotations

import re

import pandas as pd

from sensitivity.analysis.claims import transfer
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.sentences import numbers
from sensitivity.analysis.statistics import margin_of
from sensitivity.analysis.table import NotEnoughData
from sensitivity.analysis.tables.budgets import BUDGET_WORDS
from sensitivity.analysis.tables.crossover import crossover_comparisons


class DatasetTransfer:
    name = "dataset transfer"
    statement = "defaults do not transfer across datasets"
    question = "whether defaults transfer across datasets"
    would_test = ("sensitivity crossover --framework F --datasets A,B, with a published default or --tuned "
                  "DATASET=SWEEP_STUDY for each side")
    anchor = "transfer"
    unit = "home advantage (accuracy, summed over the two datasets)"
    budgeted = True

    def margin(self, effect: float, detail=None) -> float:
        return margin_of(self.name, effect, detail)

    def comparisons(self, sources: list) -> list:
        out = []
        for source in sources:
            try:
                rows = crossover_comparisons(source)
            except NotEnoughData:
                continue
            for row in rows.to_dict("records"):
                kind = "placebo" if row["placebo"] else "comparison"
                label = (f"{'placebo, ' if row['placebo'] else ''}{row['framework']}: {row['dataset_a']} x "
                         f"{row['dataset_b']}" + (f" ({row['model']})" if row.get("model") else "")
                         + ("" if row["budget"] == "epochs"
                            else f", {BUDGET_WORDS.get(row['budget'], row['budget'])}"))
                out.append(Comparison.of(row, regime=row["semantics"], claim=self.name, label=label,
                                         subject=row["config_a"], reference=row["config_b"], unit="home advantage",
                                         budget=row["budget_scale"], detail=row, role=kind, definition=row["budget"],
                                         settled=row["converged"]))
        return out

    def context(self, sources: list):
        return None

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context) -> dict:
        return transfer.transfer_claim(self, regime, rows, every_regime, effect)

    def comparison_words(self, row: dict) -> tuple:
        detail = row["detail"]
        extra = (f" (tuned for {detail['dataset_a']}: {detail['config_a']}; for {detail['dataset_b']}: "
                 f"{detail['config_b']}){time_words(detail)}{divergence_words(detail)}")
        return extra, "; vacuous: both halves' tuned configurations are the same" if detail.get("vacuous") else ""

    def pooled_words(self, regime: str, pooled, *, p_tost, margin: float, counted, differ, head: dict,
                     seeds: str) -> str:
        """What the claim's verdict rests on: the crossovers' summed home advantage and the largest of them."""
        detail = head["detail"]
        return (f"over {len(counted)} crossover{'s' if len(counted) != 1 else ''} at the published budget "
                f"(budget scale 1.0; {seeds}), the configuration tuned for a dataset against the other's there, "
                f"summed over both datasets where both have accuracies (home advantage): "
                f"{transfer.pooled_text(pooled, margin, p_tost)}; the largest, "
                f"{head['label']} "
                f"(tuned for {detail['dataset_a']}: {detail['config_a']}; for {detail['dataset_b']}: "
                f"{detail['config_b']}): {numbers(head)}{time_words(detail)}{divergence_words(detail)}")

    def budget_key(self, detail: dict) -> tuple:
        """What makes a crossover the same at the other definition of the budget."""
        return detail.get("framework"), detail.get("dataset_a"), detail.get("dataset_b"), detail.get("config_a")

    def rerun_command(self, regime: str, details: list, seeds: int, budget: str) -> str:
        """The command that runs the crossovers of `details` at `budget`."""
        tail = f"--seeds {seeds} --semantics {regime} --budget {budget}"
        if not details:
            return f"sensitivity crossover --framework F --datasets A,B {tail}"
        first = details[0]
        sides = " ".join(_side(first[f"dataset_{s}"], first[f"config_{s}"]) for s in ("a", "b"))
        model = f" --model {first['model']}" if first.get("model") and first.get("placebo") else ""
        return (f"sensitivity crossover --framework {first['framework']} --datasets {first['dataset_a']},"
                f"{first['dataset_b']} {sides}{model} {tail}")


def _side(dataset: str, label: str) -> str:
    """The option that gives a crossover's side: `--default D=NAME` or `--tuned D=STUDY`."""
    label = str(label or "")
    found = re.match(r"default (\S+)", label)
    if found:
        return f"--default {dataset}={found.group(1)}"
    found = re.match(r"best of (\S+)", label)
    return f"--tuned {dataset}={found.group(1)}" if found else f"--default {dataset}=NAME"


def divergence_words(detail: dict) -> str:
    """"; on mnist5k the configuration tuned for digits diverged in 5 of 5 runs against 0 of 5 (Fisher p=0.0079):
    its accuracy there is the chance level of the models it left"."""
    parts = []
    for item in detail.get("divergence") or ():
        collapsed = item.get("visitor_collapsed") or item.get("home_collapsed")
        visitor, home = (item["visitor_diverged"] + (item.get("visitor_collapsed") or 0),
                         item["home_diverged"] + (item.get("home_collapsed") or 0))
        text = (f"on {item['dataset']} the configuration tuned for {item['visitor']} "
                f"{'did not train (diverged or collapsed at chance)' if collapsed else 'diverged'} in "
                f"{visitor} of {item['visitor_runs']} runs against {home} of {item['home_runs']}")
        if none_if_missing(item.get("p")) is not None:
            text += f" (Fisher p={item['p']:.2g})"
        if item["all_diverged"]:
            tuned = " and ".join(f"the one tuned for {name}" for name in item["all_diverged"])
            text += (f": every run of {tuned} {'failed to train' if collapsed else 'diverged'} there, so that side "
                     "has no accuracy")
        parts.append(text)
    if detail.get("summed") in (False,) and detail.get("carried_by"):
        parts.append(f"the home advantage is not summed: its estimate is the side of {detail['carried_by']} alone "
                     "(home minus visitor there), the other side's evidence is its divergence")
    elif detail.get("summed") in (False,):
        parts.append("neither side has accuracies on both configurations: no home advantage, divergence only")
    return "".join(f"; {part}" for part in parts)


def time_words(detail: dict) -> str:
    if none_if_missing(detail.get("time_ratio")) is None:
        cells = "; ".join(f"{name} {text}" for name, text in (detail.get("cells") or {}).items())
        return f"; no train-time ratio (a cell has no converged run): test accuracy and train time, {cells}"
    low = none_if_missing(detail.get("time_low"))
    spread = f" [{low:.2f}, {detail['time_high']:.2f}]" if low is not None else ""
    return f"; each dataset's own configuration took {detail['time_ratio']:.2f}x{spread} the other's train time there"
