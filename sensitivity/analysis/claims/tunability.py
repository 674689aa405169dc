"""Claim "a framework's default leaves accuracy on the table" (issue 41; Probst, Boulesteix and Bischl's
tunability), tested by a study of `sensitivity tunability` (`tables.tunability`): each default on its own
framework and dataset, against the configuration a search around it selected on validation, both run on the same
fresh seeds.

Each default's tunability (tuned minus default, paired by seed), each knob's tunability and each knob's tuning
risk is a comparison of the claim's family (Holm within the regime and budget definition); the default's
tunability carries the verdict, its knobs' say what recovers it. Per default:
"leaves X [lo, hi] on the table" where it is higher at Holm p < ALPHA, "within noise of tuned" where TOST puts it
inside the margin, else inconclusive. The claim is "supported" where some default leaves accuracy on the table,
"not supported" where every default is within noise of tuned, else "inconclusive". The estimate is the gain of
the configuration this search selected, with its grid, budget and seeds named: a larger grid may find more.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.sentences import numbers, signed
from sensitivity.analysis.statistics import margin_of
from sensitivity.analysis.table import NotEnoughData
from sensitivity.analysis.tables.tunability import point_text, tunability_rows

COMMAND = "sensitivity tunability --frameworks F --dataset D --knobs lr,optimizer"


class Tunability:
    name = "tunability"
    statement = "a framework's default leaves accuracy on the table"
    question = "how much accuracy each default leaves against the same framework tuned on the same data"
    would_test = COMMAND + " (a grid around each framework's own default, chosen on validation, run on fresh seeds)"
    anchor = "tunability"
    unit = "accuracy, tuned minus default"
    budgeted = True

    def margin(self, effect: float, detail=None) -> float:
        return margin_of(self.name, effect, detail)

    def comparisons(self, sources: list) -> list:
        out = []
        for source in sources:
            try:
                rows = tunability_rows(source)
            except NotEnoughData:
                continue
            for row in rows.to_dict("records"):
                label = f"{row['dataset']}: {row['tunability']} on {row['framework']}, {row['role']}"
                subject = ("tuned" if row["kind"] == "risk" else
                           f"{row['role']} ({point_text(row['point'])})")
                reference = (f"all but {row['knob']} tuned" if row["kind"] == "risk" else
                             f"{row['tunability']} as published")
                out.append(Comparison.of(row, regime=row["semantics"], claim=self.name, label=label,
                                         subject=subject, reference=reference, unit="accuracy",
                                         budget=row["budget_scale"], definition=row["budget"], detail=row,
                                         compared=not row["same_as_reference"]))
        return out

    def context(self, sources: list):
        return None

    def comparison_words(self, row: dict) -> tuple:
        d = row["detail"]
        return (f" (mean test accuracy {d['subject_mean']:.3f} against {d['reference_mean']:.3f}; noise floor "
                f"+-{d['noise_floor']:.3f})", "")

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context) -> dict:
        heads = rows[[d["role"] == "tuned" for d in rows["detail"]]]
        if heads.empty and regime != "native":
            return {"verdict": "not tested", "sentence": f"{regime.capitalize()}: {self.question} is not tested: a "
                                                         "question of the native regime (each default as its users "
                                                         f"run it), which the {regime} regime does not ask."}
        if heads.empty:
            return {"verdict": "not tested",
                    "sentence": f"{regime.capitalize()}: {self.question} is not tested: no study of sensitivity "
                                f"tunability in this regime ({COMMAND} would test it)."}
        cut = heads[heads["verdict"].eq("cut budget")]
        if len(cut) == len(heads):
            scales = pd.to_numeric(cut["budget_scale"], errors="coerce").dropna()
            return {"verdict": "not tested", "budget_scale": float(scales.min()) if len(scales) else None,
                    "sentence": sentences.cut(self, regime, float(scales.min()) if len(scales) else None)}
        rows = rows[rows["verdict"].ne("cut budget")]
        heads = heads[heads["verdict"].ne("cut budget")]
        margin = self.margin(effect)
        said, verdicts, tops = [], [], []
        for head in heads.to_dict("records"):
            gains = _of_default(rows, head["detail"])
            gains = gains[[d["kind"] == "gain" for d in gains["detail"]]]
            verdict, top = _default_verdict(head, gains)
            verdicts.append(verdict)
            tops.append(top)
            said.append(_default_sentence(head, rows, verdict, margin, top))
        leaving = [top for top, v in zip(tops, verdicts) if v == "leaves"]
        if leaving:
            verdict = "supported"
            top = pd.Series(max(leaving, key=lambda r: r["estimate"]))
        elif all(v == "within noise" for v in verdicts):
            verdict, top = "not supported", heads.loc[heads["estimate"].idxmax()]
        else:
            verdict, top = "inconclusive", heads.loc[heads["estimate"].idxmax()]
        d = top["detail"]
        grid = f"{d['grid_points']}-point grid, {d['selection_seeds']} selection seed(s)"
        return {"verdict": verdict, "estimate": top["estimate"], "low": none_if_missing(top["low"]),
                "high": none_if_missing(top["high"]),
                "unit": f"accuracy, {d['tunability']} {d['role']} minus default",
                "p": none_if_missing(top["p"]), "p_holm": none_if_missing(top["p_holm"]),
                "n_a": int(top["n_a"]), "n_b": int(top["n_b"]), "n_tested": len(heads),
                "n_differ": len(leaving), "margin": margin, "budgets": f"{d['budget']}; {grid}",
                "seeds_needed": none_if_missing(top["seeds_needed"]) if verdict == "inconclusive" else None,
                "sentence": f"{regime.capitalize()}: {self.question}, each default on its own framework, the "
                            "configuration chosen on validation with selection seeds and both run on fresh seeds, "
                            "paired by seed (a gain of the selected configuration: a larger grid may find more): "
                            + "; ".join(said) + "."}


def _of_default(rows: pd.DataFrame, d: dict) -> pd.DataFrame:
    """The comparisons of the default `d` names (every role)."""
    key = (d["tunability"], d["framework"], d["dataset"])
    return rows[[(x["tunability"], x["framework"], x["dataset"]) == key for x in rows["detail"]]]


def _default_verdict(head: dict, gains: pd.DataFrame) -> tuple:
    """("leaves", the largest gain higher at Holm p < ALPHA: tuned, or a knob alone), ("within noise", head) where
    the tuned configuration is equivalent to the default, or is the default; else ("inconclusive", head). Any
    selected configuration that beats the default on fresh seeds shows what the default leaves."""
    higher = gains[gains["verdict"].eq("higher")]
    if len(higher):
        return "leaves", higher.loc[higher["estimate"].idxmax()].to_dict()
    if head["verdict"] in ("equivalent", "not compared"):
        return "within noise", head
    return "inconclusive", head


def _default_sentence(head: dict, rows: pd.DataFrame, verdict: str, margin: float, top: dict) -> str:
    d = head["detail"]
    name = f"{d['tunability']} on {d['framework']} ({d['dataset']})"
    if verdict == "leaves":
        text = (f"{name} leaves {numbers(top)} on the table ({top['detail']['role']}: "
                f"{point_text(top['detail']['point'])})")
    elif head["verdict"] == "not compared":
        text = f"{name}: the search selected the default itself (within noise of tuned: nothing left on the table)"
    elif verdict == "within noise":
        text = (f"{name} is within noise of tuned: {numbers(head)}, inside +-{margin:g} (TOST) "
                f"(tuned: {point_text(d['point'])})")
    else:
        text = f"{name}: inconclusive, {numbers(head)} (tuned: {point_text(d['point'])})"
    parts = []
    for row in _of_default(rows, d).to_dict("records"):
        if row["detail"]["role"] == top["detail"]["role"]:
            continue  # said first
        what, k = row["label"].rsplit(", ", 1)[-1], row["detail"]
        if row["verdict"] == "not compared":
            why = "it kept the default" if k["kind"] == "gain" else "the tuned configuration leaves it at the default"
            parts.append(f"{what} 0 ({why})")
            continue
        interval = (f" [{signed(row['low'])}, {signed(row['high'])}]" if none_if_missing(row["low"]) is not None
                    else " (no interval)")
        where = f" at {point_text(k['point'])}" if k["kind"] == "gain" else ""
        parts.append(f"{what} {signed(row['estimate'])}{interval}{where} ({row['verdict']})")
    floor = d["noise_floor"]
    return (text + (f"; {', '.join(parts)}" if parts else "")
            + (f"; noise floor +-{floor:.3f} ({d['fresh_seeds']} seeds a side)" if floor == floor else "")
            + (" (optimizer alone keeps the default's absolute lr)" if "optimizer" in d["point"] else ""))
