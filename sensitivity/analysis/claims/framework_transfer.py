"""Claim "defaults do not transfer across frameworks" (Liu et al. 2018), judged per default (issue 41): each
default moved from its home framework to each other one against itself at home, same dataset, regime and budget
(`tables.transfer.transfer_comparisons`), never a pooled mean in which one default that does not transfer can hide.

Per regime and budget definition (the source's epochs, its steps), Holm runs over the regime's pairs (`judge`: the
canonical pairs are never in the native family). A default "loses" on a target where moved minus home is lower at
Holm p < ALPHA with its estimate below -margin, or where its runs fail to train (diverge or collapse) more often
than at home by Fisher's exact test, Holm-corrected over the same pairs. The claim is

- "supported" where one default loses on one target under both definitions, on converged runs (an
  intersection-union test: each definition must reject, no further correction);
- "not supported" where every pair is equivalent (TOST within +-margin) under every definition that ran;
- "inconclusive" otherwise, naming the default that carries it and the definition under which it holds.

The canonical regime is the control: where every pair's runs are identical on every seed it says so ("control
held") instead of an interval around an exact 0; a pair that differs there is "control failed". The pooled mean of
the pairs (one contrast of their arms, a home arm counted once) is said beside, never in, the verdict; where an
ablation study walked from one set-up to another, the knob of its largest step is named.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.budget_verdicts import command
from sensitivity.analysis.claims.sentences import numbers, signed, untrained
from sensitivity.analysis.statistics import ALPHA, REGIME, holm, margin_of
from sensitivity.analysis.table import NotEnoughData
from sensitivity.analysis.tables.ablation import ablation_path
from sensitivity.analysis.tables.budgets import BUDGET_WORDS, converged_text
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
        found = per_default_verdict(self, regime, rows, every_regime, effect, context["arms"])
        if regime == "native" and found["verdict"] != "not tested" and context["ablation"]:
            found["note"] = context["ablation"]  # the knob that carries the largest native difference
        return found

    def comparison_words(self, row: dict) -> tuple:
        return "", ""

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


def pairs_by_default(counted: pd.DataFrame, margin: float) -> dict:
    """{(dataset, default, target): {budget: its judged pair}} of a regime's counted comparisons: each pair's
    estimate, interval, Holm p, verdict, convergence, whether its runs are identical, whether it loses (lower below
    -margin, or more runs that fail to train at Fisher's Holm-corrected p < ALPHA) and whether it is equivalent."""
    out = {}
    for budget, part in counted.groupby(counted["budget"].fillna("epochs"), sort=False):
        failing = [none_if_missing(row["detail"].get("p_diverged"))
                   if untrained(row["detail"], "a") / max(1, row["detail"].get("runs_a", 1))
                   > untrained(row["detail"], "b") / max(1, row["detail"].get("runs_b", 1)) else None
                   for row in part.to_dict("records")]
        failing_holm = holm(failing)
        for row, p_fail in zip(part.to_dict("records"), failing_holm):
            d = row["detail"]
            lower = row["verdict"] == "lower" and row["estimate"] < -margin
            fails = p_fail is not None and p_fail < ALPHA
            out.setdefault((d["dataset"], d["default"], d["framework"]), {})[budget] = {
                **row, "home": d["source_framework"], "loses": bool(lower or fails), "fails_to_train": fails,
                "p_fail_holm": p_fail, "equivalent": row["verdict"] == "equivalent",
                "identical": bool(d.get("identical"))}
    return out


def per_default_verdict(claim, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                        arms: dict) -> dict:
    """The claim's entry in `regime` (see the module)."""
    margin = claim.margin(effect)
    compared = rows[rows["role"].eq("comparison") & rows["verdict"].ne("not compared")]
    counted = compared[compared["verdict"].ne("cut budget")]
    scales = pd.to_numeric(compared["budget_scale"], errors="coerce").dropna()
    facts = {"budget_scale": float(scales.min()) if len(scales) else None, "n_tested": len(counted),
             "n_trials": int((counted["n_a"] + counted["n_b"]).sum())}
    if compared.empty:
        return {**facts, "verdict": "not tested", "sentence": sentences.untested(claim, regime)}
    if counted.empty:
        return {**facts, "verdict": "not tested", "sentence": sentences.cut(claim, regime, facts["budget_scale"])}
    pairs = pairs_by_default(counted, margin)
    ran = [b for b in BUDGETS if any(b in found for found in pairs.values())]
    table = _table(pairs, ran)
    by_budget = _by_budget(claim, regime, pairs, compared, ran)
    if regime == "canonical":
        return {**facts, **_control(pairs, by_budget, table, margin)}
    losing = {key: found for key, found in pairs.items() if any(p["loses"] for p in found.values())}
    both = [key for key, found in losing.items()
            if all(b in found and found[b]["loses"] and found[b]["converged"] is True for b in BUDGETS)]
    if both:
        verdict, key = "supported", min(both, key=lambda k: pairs[k]["epochs"]["estimate"])
    elif all(p["equivalent"] for found in pairs.values() for p in found.values()):
        verdict, key = "not supported", min(pairs, key=lambda k: _first(pairs[k])["estimate"])
    else:
        verdict = "inconclusive"
        key = (min(losing, key=lambda k: min(p["estimate"] for p in losing[k].values())) if losing else
               min(pairs, key=lambda k: _first(pairs[k])["estimate"]))
    head = _head(pairs[key])
    control = _control_text(every_regime, margin)
    words = _words(claim, regime, verdict, key, pairs, ran, margin, control, arms.get(ran[0], {}).get(regime)
                   if ran else None, by_budget)
    return {**facts, "verdict": verdict, "estimate": head["estimate"], "low": head["low"], "high": head["high"],
            "unit": f"{key[1]}: {key[2]} vs {head['home']}", "p": head["p"], "p_holm": head["p_holm"],
            "p_tost": head["p_tost"], "n_a": int(head["n_a"]), "n_b": int(head["n_b"]),
            "n_differ": sum(p["loses"] for found in pairs.values() for p in found.values()),
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None,
            "budgets": _budgets_text(pairs, by_budget), "by_budget": by_budget, "control": control, "table": table,
            "sentence": words}


def _first(found: dict) -> dict:
    """A pair's result at the first definition it ran (the published epochs before the steps)."""
    return found[next(b for b in BUDGETS if b in found)]


def _head(found: dict) -> dict:
    """The result a pair is quoted by: where it loses (the epochs first), else its first definition's."""
    return next((found[b] for b in BUDGETS if b in found and found[b]["loses"]), None) or _first(found)


def _pair_text(key: tuple, found: dict) -> str:
    return f"{key[1]} on {key[2]} vs on {_first(found)['home']}"


def _by_budget(claim, regime: str, pairs: dict, compared: pd.DataFrame, ran: list) -> dict:
    """{budget: the definition's verdict (a default loses: "supported"; every pair equivalent: "not supported";
    else "inconclusive"), its losing pairs, its worst pair's estimate, its convergence} or {"not_run": command};
    the pairs run at the epochs and left out at the steps are named with the command that runs them."""
    out = {}
    for budget in BUDGETS:
        found = {key: f[budget] for key, f in pairs.items() if budget in f}
        if not found:
            out[budget] = {"not_run": command(claim, regime, compared, budget)}
            continue
        lose = [key for key, p in found.items() if p["loses"]]
        worst = found[min(found, key=lambda k: found[k]["estimate"])]
        verdict = ("supported" if lose else "not supported" if all(p["equivalent"] for p in found.values())
                   else "inconclusive")
        converged = [p["converged"] for p in found.values()]
        out[budget] = {"verdict": verdict, "lose": [_pair_text(k, pairs[k]) for k in lose],
                       "estimate": worst["estimate"], "low": none_if_missing(worst["low"]),
                       "high": none_if_missing(worst["high"]), "p": none_if_missing(worst["p_holm"]),
                       "n_a": int(worst["n_a"]), "n_b": int(worst["n_b"]), "n_tested": len(found),
                       "converged": (False if False in converged else True if all(c is True for c in converged)
                                     else None)}
    if len(ran) == 2:
        left = [key for key, f in pairs.items() if "epochs" in f and "steps" not in f]
        if left:
            rows = compared[[(d["dataset"], d["default"], d["framework"]) in left for d in compared["detail"]]]
            out["steps"]["left_out"] = [_pair_text(k, pairs[k]) for k in left]
            out["steps"]["left_out_command"] = command(claim, regime, rows, "steps")
    return out


def _budgets_text(pairs: dict, by_budget: dict) -> str:
    """"at epochs: 1/6 lose, not converged; at steps (1 of 6 run): 1/1 lose, converged" for the headline."""
    parts = []
    for budget, record in by_budget.items():
        if "not_run" in record:
            parts.append(f"at {budget}: not run")
            continue
        some = (f" ({record['n_tested']} of {len(pairs)} run)" if record["n_tested"] < len(pairs) else "")
        parts.append(f"at {budget}{some}: {len(record['lose'])}/{record['n_tested']} lose, "
                     f"{converged_text(record['converged'])}")
    return "; ".join(parts)


def _table(pairs: dict, ran: list) -> list:
    """One row per default and target: the default, its home, the target, and at each definition the difference
    [interval], its verdict and convergence ("not run" where it did not run)."""
    out = []
    for (dataset, default, target), found in sorted(pairs.items()):
        row = {"dataset": dataset, "default": default, "home": _first(found)["home"], "target": target}
        for budget in BUDGETS:
            p = found.get(budget)
            if p is None:
                row[f"at {budget}"] = "not run"
                continue
            if p["identical"]:  # an exact 0: no interval around it
                row[f"at {budget}"] = f"identical on every seed, {converged_text(p['converged'])}"
                continue
            low = none_if_missing(p["low"])
            spread = f" [{signed(low)}, {signed(p['high'])}]" if low is not None else ""
            state = ("loses" + (" (fails to train)" if p["fails_to_train"] else "") if p["loses"]
                     else p["verdict"])
            row[f"at {budget}"] = f"{signed(p['estimate'])}{spread}, {state}, {converged_text(p['converged'])}"
        out.append(row)
    return out


def _control(pairs: dict, by_budget: dict, table: list, margin: float) -> dict:
    """The canonical regime's entry: a check of the pipeline, never a finding about frameworks."""
    every = [p for found in pairs.values() for p in found.values()]
    differ = [p for p in every if p["verdict"] in ("lower", "higher")]
    if all(p["identical"] for p in every):
        verdict, control = "control held", "identical on every seed: control held"
        state = (f"every one of the {len(every)} pairs ran identically on every seed (the same accuracy and the "
                 "same test samples right), as the same formulas and initial weights must give")
    elif differ:
        verdict, control = "control failed", f"{len(differ)} of {len(every)} pairs differ"
        state = (f"{len(differ)} of {len(every)} pairs differ after Holm where the frameworks compute the same "
                 "formulas: the pipeline, not the frameworks, differs; no native verdict can rest on it")
    elif all(p["equivalent"] for p in every):
        verdict, control = "control held", f"all {len(every)} pairs equivalent within +-{margin:g}"
        state = f"every pair is equivalent within +-{margin:g} (TOST), as the same formulas must give"
    else:
        verdict, control = "inconclusive", "not shown equivalent"
        state = "no pair differs, but not every pair is shown equivalent: too few seeds or test samples"
    head = max(every, key=lambda p: abs(p["estimate"]))
    if all(p["identical"] for p in every):  # an exact 0: no interval around it
        head = {**head, "estimate": float("nan"), "low": None, "high": None, "p": None, "p_holm": None}
    return {"verdict": verdict, "estimate": head["estimate"], "low": none_if_missing(head["low"]),
            "high": none_if_missing(head["high"]), "unit": "accuracy", "p": head["p"], "p_holm": head["p_holm"],
            "n_a": int(head["n_a"]), "n_b": int(head["n_b"]), "n_differ": len(differ), "by_budget": by_budget,
            "budgets": "; ".join(f"at {b}: " + ("not run" if "not_run" in r else f"{r['n_tested']} pairs")
                                 for b, r in by_budget.items()),
            "control": control, "table": table,
            "sentence": ("Canonical: the control (the same formulas and initial weights on every framework, so a "
                         f"default moved between frameworks is the same computation): {state}.")}


def _control_text(every_regime: pd.DataFrame, margin: float):
    """What the canonical control on the same pairs showed, for the native claim's line; None without it."""
    control = every_regime[every_regime[REGIME].eq("canonical") & every_regime["role"].eq("comparison")
                           & every_regime["verdict"].isin(("lower", "higher", "equivalent", "inconclusive",
                                                           "not testable"))]
    if control.empty:
        return None
    details = list(control["detail"])
    if all(d.get("identical") for d in details):
        return "canonical: identical on every seed"
    differ = int(control["verdict"].isin(("lower", "higher")).sum())
    if differ:
        return f"canonical: {differ} of {len(control)} differ (control failed)"
    equivalent = int(control["verdict"].eq("equivalent").sum())
    return f"canonical: {equivalent} of {len(control)} equivalent"


def _words(claim, regime: str, verdict: str, key: tuple, pairs: dict, ran: list, margin: float, control,
           pooled, by_budget: dict) -> str:
    """The native claim's sentence: its lead, each definition's pairs that lose, the carrier and the control."""
    carrier = _pair_text(key, pairs[key])
    found = pairs[key]
    holds = [b for b in BUDGETS if b in found and found[b]["loses"]]
    lead = {"supported": f"{claim.statement} here: {carrier} loses under both definitions of the published "
                         "budget, on converged runs",
            "not supported": f"every default transfers within +-{margin:g} here, under every definition run",
            "inconclusive": (f"not settled {claim.question}: {carrier} loses at the "
                             + " and the ".join(BUDGET_WORDS[b] for b in holds)
                             + ("" if len(holds) == 2 else
                                f", not shown at the {BUDGET_WORDS[next(b for b in BUDGETS if b not in holds)]}")
                             + ("; both on converged runs is what supported needs" if len(holds) == 2 else "")
                             if holds else f"not settled {claim.question}: no default loses, not every one is "
                                           f"equivalent within +-{margin:g}")}[verdict]
    parts = []
    for budget in ran:
        at = [(k, f[budget]) for k, f in sorted(pairs.items()) if budget in f]
        listed = "; ".join(f"{_pair_text(k, pairs[k])} {numbers(p)}"
                           + (", loses" if p["loses"] else f", {p['verdict']}")
                           + (" (its runs fail to train more often, Fisher Holm p="
                              f"{p['p_fail_holm']:.2g})" if p["fails_to_train"] else "")
                           + f", {converged_text(p['converged'])}" for k, p in at)
        parts.append(f"at the {BUDGET_WORDS[budget]} ({len(at)} pairs, Holm over them): {listed}")
    text = f"{regime.capitalize()}: {lead}. Per default, moved minus at home: " + ". ".join(parts)
    if pooled is not None and pooled[0].se is not None:
        diff, k = pooled
        text += (f". Beside it, not in it: the pairs' mean at the {BUDGET_WORDS[ran[0]]}, as one contrast of the "
                 f"arms, {signed(diff.estimate)} [{signed(diff.low)}, {signed(diff.high)}] over {k} pairs (a mean "
                 "in which one default that does not transfer can hide)")
    for budget, record in by_budget.items():
        if "not_run" in record:
            text += f"; not run at the {BUDGET_WORDS[budget]} (to run it: {record['not_run']})"
        elif record.get("left_out"):
            text += (f"; at the {BUDGET_WORDS[budget]}, {len(record['left_out'])} comparisons were left out "
                     f"({'; '.join(record['left_out'])}; to run them: {record['left_out_command']})")
    if control:
        text += f"; {control}"
    return text + "."
