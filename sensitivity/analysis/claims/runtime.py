"""Claim "more accuracy costs more runtime" (DLBench 2021; Liu et al. 2018 judge runtime and accuracy together):
the frameworks on the regime's runtime-accuracy frontier, and the best configuration (chosen on validation accuracy,
mean over seeds) of the most accurate framework against that of each other one: the difference in test accuracy,
and its cost, the ratio of train times, taken from the chosen configurations run again alone on fresh seeds
(`sensitivity timing`; their accuracy then carries no winner's curse of the choice) where they were, else from the
sweep's own seeds, with their times alone where timed, else contended, which decide nothing. The claim keeps its
headline comparison: the pair that supports it, else the largest.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.sentences import needed, numbers
from sensitivity.analysis.intervals import difference, ratio
from sensitivity.analysis.statistics import REGIME, margin_of
from sensitivity.analysis.table import NotEnoughData, trained
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.tables.runtime import first_same_configuration_times, parallel_ratios, ratios_text
from sensitivity.analysis.tables.seeds import best_configurations

FIXED_COST_FLOOR_S = 2.0  # a mean train time below this is dominated by fixed costs (timers, first steps)


class RuntimeAccuracy:
    name = "runtime-accuracy"
    statement = "more accuracy costs more runtime"
    question = "whether more accuracy costs more runtime"
    would_test = "a sweep of two or more frameworks, then sensitivity timing SWEEP"
    anchor = "frontier"
    unit = "most accurate framework's best minus another's (accuracy)"
    budgeted = False

    def margin(self, effect: float, detail=None) -> float:
        return margin_of(self.name, effect, detail)

    def comparisons(self, sources: list) -> list:
        return tradeoff_comparisons(sources[0], sources[1:])

    def context(self, sources: list) -> dict:
        return timing_note(sources)

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context: dict) -> dict:
        return runtime_claim(regime, rows, effect, context.get(regime, context.get("", "")),
                             ran=regime in context.get("ran", ()))

    def comparison_words(self, row: dict) -> tuple:
        return f", at {row['detail']['time_ratio']:.2f}x the train time", ""


def runtime_claim(regime: str, rows: pd.DataFrame, effect: float, timing: str, ran: bool = True) -> dict:
    """More accuracy costs more runtime: the most accurate framework's best configuration against each other
    framework's. A pair supports it where the first is more accurate (Holm) and its train-time ratio's interval
    lies above 1; it goes against it where the two are equivalent in accuracy, or the first is more accurate and
    its ratio's interval lies below 1 (more accurate and faster). "Supported" where a pair supports it, "not
    supported" where every pair goes against it, else "inconclusive". `ran`: whether the main study ran any trial
    in the regime."""
    frontier = rows[rows["unit"].eq("frontier")]
    if frontier.empty and not ran:
        return {"verdict": "not tested", "sentence": f"{regime.capitalize()}: {RuntimeAccuracy.statement}? Not "
                                                     "tested: the main study (a sweep) ran no trial in this regime."}
    if frontier.empty:
        return {"verdict": "not tested", "sentence": f"{regime.capitalize()}: {RuntimeAccuracy.statement}? Not "
                                                     "tested: no trial of the main study (a sweep) in this regime "
                                                     "finished with status ok."}
    detail = frontier.iloc[0]["detail"]
    pairs = rows[rows["unit"].ne("frontier")]
    on = f"{regime.capitalize()}: on the runtime-accuracy frontier: {frontier.iloc[0]['subject']}"
    base = {"n_trials": detail["n_trials"], "n_comparisons": len(pairs), "n_tested": len(pairs)}
    if pairs.empty:
        return {**base, "verdict": "not tested", "sentence": on + "; one framework only, no trade-off to judge"
                                                              + timing + "."}
    untestable = _untestable(pairs)
    if untestable:
        head = pairs.iloc[int(np.argmax([abs(none_if_missing(e) or 0) for e in pairs["estimate"]]))]
        d = head["detail"]
        diverged = (f" (over converged runs; diverged, left out: {d.get('diverged_a', 0)} of {head['subject']}'s, "
                    f"{d.get('diverged_b', 0)} of {head['reference']}'s)"
                    if d.get("diverged_a") or d.get("diverged_b") else "")
        return {**base, "verdict": "not testable", "estimate": head["estimate"], "low": head["low"],
                "high": head["high"], "unit": f"accuracy, best of {head['subject']} vs best of {head['reference']}",
                "p": head["p"], "p_holm": none_if_missing(head["p_holm"]), "n_a": int(head["n_a"]),
                "n_b": int(head["n_b"]), "budgets": f"train times {head['detail'].get('timed') or 'contended'}",
                "control": ("times of runs side by side" if "side by side" in untestable else
                            "runs under 2 s of training: fixed costs dominate"),
                "sentence": f"{on}; {RuntimeAccuracy.question} is not testable here: {untestable}; and "
                            f"{choice_words(d)}; the pairs as measured, for what they show{diverged}: "
                            + "; ".join(pairs["sentence"]) + timing + "."}
    judged = [trade_off(row) for row in pairs.to_dict("records")]
    if "costs" in judged:
        verdict, at = "supported", judged.index("costs")
    elif all(j in ("no cost", "faster") for j in judged):
        verdict, at = "not supported", int(np.argmax([abs(none_if_missing(e) or 0) for e in pairs["estimate"]]))
    else:
        verdict, at = "inconclusive", next(i for i, j in enumerate(judged) if j == "open")
    head = pairs.iloc[at]
    return {**base, "verdict": verdict, "estimate": head["estimate"], "low": head["low"], "high": head["high"],
            "unit": "accuracy", "p": head["p"], "p_holm": none_if_missing(head["p_holm"]), "n_a": int(head["n_a"]),
            "n_b": int(head["n_b"]), "n_differ": judged.count("costs"),
            "budgets": f"train times {head['detail'].get('timed') or 'contended'}",
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None,
            "sentence": runtime_words(on, verdict, head.to_dict(), judged[at], effect) + "; "
                        + choice_words(head["detail"]) + timing + "."}


WINNERS_CURSE = ("each framework's best configuration is chosen on validation among the sweep's on the same seeds "
                 "its test accuracy is compared on, so its accuracy carries the winner's curse (the chosen "
                 "configuration run alone on 3 fresh seeds a framework would remove it: sensitivity timing SWEEP)")
FRESH = ("each framework's best configuration, chosen on validation among the sweep's, is tested on fresh seeds run "
         "alone, disjoint from those it was chosen on, so its accuracy carries no winner's curse")


def choice_words(detail: dict) -> str:
    """Whether the compared accuracies carry the winner's curse of the choice, or come from fresh seeds."""
    return FRESH if detail.get("fresh_seeds") else WINNERS_CURSE


def _untestable(pairs: pd.DataFrame) -> str:
    """Why the pairs cannot test the claim here ("" where they can): its train times must come from runs alone
    that train 2 s or more."""
    details = list(pairs["detail"])
    why = []
    if any(d.get("timed") != "alone" for d in details):
        why.append("the train times come from trials that ran side by side, which stretch frameworks unequally "
                   "(sensitivity timing SWEEP times them alone)")
    elif any(d.get("fixed_cost_dominated") for d in details):
        floor = details[0].get("fixed_cost_floor_s", FIXED_COST_FLOOR_S)
        why.append(f"the runs train for under {floor:g} s, where fixed costs (timers, the first steps) dominate "
                   "what is measured (a longer budget or a larger dataset would test it)")
    return "; ".join(why)


def trade_off(row: dict) -> str:
    """"costs" (more accurate and slower), "faster" (more accurate and faster), "no cost" (as accurate) or
    "open" (not settled) for a runtime comparison."""
    detail = row["detail"]
    low, high = none_if_missing(detail.get("time_low")), none_if_missing(detail.get("time_high"))
    if row["verdict"] == "equivalent":
        return "no cost"
    if detail.get("timed") == "contended":  # times of trials side by side: contention differs by framework
        return "open"
    if row["verdict"] == "higher" and low is not None and low > 1:
        return "costs"
    if row["verdict"] == "higher" and high is not None and high < 1:
        return "faster"
    return "open"


def runtime_words(on: str, verdict: str, head: dict, judged: str, effect: float) -> str:
    """The runtime claim: the deciding pair's accuracy difference and train-time ratio, and what they show."""
    d = head["detail"]
    low, high = none_if_missing(d.get("time_low")), none_if_missing(d.get("time_high"))
    ratio = f"{d['time_ratio']:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if low is not None else " (no interval)")
    top, other = head["subject"], head["reference"]
    ending = {"costs": f"{top} buys its accuracy with runtime: more accurate, and its train-time ratio's interval "
                       "lies above 1",
              "faster": f"{top} is more accurate and faster: no trade-off",
              "no cost": f"{other} is as accurate within +-{effect:g}: no accuracy to pay for",
              "open": "inconclusive: " + (needed(head, effect) if head["verdict"] == "inconclusive" else
                                         "more accurate, but whether it is slower is not settled (the ratio's "
                                         "interval spans 1)")}[judged]
    if d.get("timed") == "contended" and judged == "open" and head["verdict"] == "higher":
        ending = ("inconclusive: more accurate, but its train times come from the sweep's trials running side by "
                  "side (contended), which stretch frameworks unequally; the cost is judged on times measured "
                  "alone only (sensitivity timing SWEEP)")
    if d.get("fixed_cost_dominated"):
        ending += (f"; a mean train time below {d['fixed_cost_floor_s']:g} s is dominated by fixed costs (start of "
                   "epochs, timers), so the ratio says little of the frameworks' speed")
    lead = {"supported": "more accuracy costs more runtime here",
            "not supported": "more accuracy does not cost runtime here",
            "inconclusive": "not settled whether more accuracy costs more runtime"}[verdict]
    chosen = ""
    if d.get("chooser") == "val_accuracy":
        chosen = f" on validation accuracy ({d['chosen_a']:.3f} against {d['chosen_b']:.3f})"
    if d.get("diverged_a") or d.get("diverged_b"):
        chosen += (f" (over converged runs; diverged, left out: {d.get('diverged_a', 0)} of {top}'s, "
                   f"{d.get('diverged_b', 0)} of {other}'s)")
    timed = {"alone": "timed alone", "contended": "contended: the sweep's, side by side"}.get(d.get("timed"), "")
    return (f"{on}; {lead}: the best configuration of {top}, the most accurate framework{chosen}, against that of "
            f"{other}: test accuracy{' on fresh seeds, run alone,' if d.get('fresh_seeds') else ''} "
            f"{d['accuracy_a']:.3f} against {d['accuracy_b']:.3f}, {numbers(head)}; {top}'s "
            f"train time {ratio} {other}'s ({timed}); {ending}")


def timing_note(sources: list) -> dict:
    """{regime: what its runtime claim's times rest on}: the sweep's concurrency against the same configurations
    timed alone, and the same configuration's time to target on every framework (`runtime`); "ran": the regimes
    the main study ran trials in."""

    ratios = ratios_text(parallel_ratios(sources[0], sources[1:]))
    times, study = first_same_configuration_times(sources)
    ran = set(sources[0][REGIME].dropna()) if REGIME in sources[0] else set()
    return {"": ratios, "ran": ran, **{regime: ratios + _times_text(part, study)
                           for regime, part in times.groupby(REGIME, sort=False)}}


def _times_text(times: pd.DataFrame, study) -> str:
    def framework(r: dict) -> str:
        return f"{r['framework']} {r['time_text']} ({r['reached']} of {r['n']} runs reached it), {r['at_budget_text']}"

    shown = "; ".join(f"{default} on {dataset}, to {part['target'].iloc[0]:.3f} and at {part['budget'].iloc[0]:.2f} "
                      "s: " + ", ".join(map(framework, part.to_dict("records")))
                      for (dataset, default), part in times.groupby(["dataset", "default"], sort=False))
    return (f"; the same configuration on every framework (study {study}): its mean time to the lowest mean final "
            f"validation accuracy among the frameworks, then its validation accuracy at the shortest mean train time "
            f"among them (95% intervals over seeds): {shown}")


def alone_times(sweep: pd.DataFrame, sources: list) -> dict:
    """{trial number of the sweep: its train time when run again alone} from `sensitivity timing` runs of the
    sweep among `sources` (marked `timing: alone`, `timed_trial`); {} without them."""
    name, out = sweep.attrs.get("study"), {}
    for source in sources:
        if not {"timing", "timed_study", "timed_trial"} <= set(source.columns):
            continue
        runs = trained(source)
        runs = runs[runs["timing"].eq("alone") & runs["timed_study"].eq(name) & runs["outcome"].eq("ok")]
        for number, seconds in zip(runs["timed_trial"], runs["train_time_s"]):
            if number == number and seconds == seconds and seconds > 0:
                out.setdefault(int(number), []).append(float(seconds))
    return {n: float(np.median(t)) for n, t in out.items()}


def _times(runs: pd.DataFrame, alone: dict) -> tuple:
    """(train times, "alone" or "contended"): the times alone of the runs that were timed alone (`sensitivity
    timing` times one seed of a configuration), else the sweep's."""
    timed = [alone[int(n)] for n in runs["number"] if int(n) in alone] if "number" in runs else []
    if timed:
        return np.array(timed, float), "alone"
    return runs["train_time_s"].to_numpy(float), "contended"


def fresh_runs(sweep: pd.DataFrame, sources: list, config_id: str) -> pd.DataFrame:
    """The runs of `sensitivity timing` of the sweep's configuration `config_id` on fresh seeds, alone (marked
    `fresh_seed`; earlier timing runs repeated the sweep's own seed and are not these); empty without them."""
    name = sweep.attrs.get("study")
    for source in sources:
        if not {"timing", "timed_study", "fresh_seed", "config_id"} <= set(source.columns):
            continue
        runs = trained(source)
        runs = runs[runs["timing"].eq("alone") & runs["timed_study"].eq(name) & runs["fresh_seed"].eq(True)
                    & runs["config_id"].eq(f"alone:{config_id}")]
        if len(runs):
            return runs
    return pd.DataFrame()


def tradeoff_comparisons(table: pd.DataFrame, others=()) -> list:
    try:
        frontier = runtime_accuracy_frontier(table)
        best = best_configurations(table[table["outcome"].eq("ok")], ("framework", REGIME))
    except NotEnoughData:
        return []
    rows, out = trained(table), []
    for regime, chosen in best.groupby(REGIME, sort=False):
        front = frontier.points[frontier.points["on_frontier"] & frontier.points[REGIME].eq(regime)]
        counts = front["framework"].value_counts()
        fastest = front.sort_values("train_time_s")["framework"].iloc[0] if len(front) else None
        on = ", ".join(f"{fw} ({k} point{'s' if k != 1 else ''})" for fw, k in counts.items())
        none = {"estimate": np.nan, "low": None, "high": None, "p": None, "n_a": len(front), "n_b": 0, "sd": None}
        out.append(Comparison.of(none, regime=regime, claim=RuntimeAccuracy.name, label="frontier", subject=on,
                                 reference="", unit="frontier",
                                 detail={"frontier": counts.to_dict(), "fastest": fastest,
                                         "n_trials": int(rows[REGIME].eq(regime).sum())}))
        # over converged runs (a diverged seed would make the sample bimodal); the diverged are counted beside
        every = {fw: rows[rows[REGIME].eq(regime) & rows["framework"].eq(fw) & rows["config_id"].eq(cid)]
                 for fw, cid in zip(chosen["framework"], chosen["best_config_id"])}
        seeds = {fw: runs[runs["outcome"].eq("ok")] for fw, runs in every.items()}
        if len(seeds) < 2:
            continue
        chooser = "val_accuracy" if rows["val_accuracy"].notna().any() else "accuracy"
        top = max(seeds, key=lambda fw: seeds[fw][chooser].mean())
        alone = alone_times(table, others)
        chosen_ids = dict(zip(chosen["framework"], chosen["best_config_id"]))
        fresh = {fw: fresh_runs(table, others, chosen_ids[fw]) for fw in seeds}
        for other in sorted(fw for fw in seeds if fw != top):
            a, b = seeds[top], seeds[other]
            tested = {fw: fresh[fw][fresh[fw]["outcome"].eq("ok")] for fw in (top, other) if len(fresh[fw])}
            on_fresh = len(tested) == 2 and min(len(t) for t in tested.values()) >= 2
            if on_fresh:  # the choice's test and times: its runs alone on fresh seeds
                test_a, test_b = tested[top], tested[other]
                time_a, time_b = test_a["train_time_s"].to_numpy(float), test_b["train_time_s"].to_numpy(float)
                timed, left_a, left_b = "alone", len(fresh[top]) - len(test_a), len(fresh[other]) - len(test_b)
            else:
                test_a, test_b = a, b
                (time_a, kind_a), (time_b, kind_b) = _times(a, alone), _times(b, alone)
                timed = "alone" if kind_a == kind_b == "alone" else "contended"
                if timed == "contended":
                    time_a, time_b = a["train_time_s"].to_numpy(float), b["train_time_s"].to_numpy(float)
                left_a, left_b = len(every[top]) - len(a), len(every[other]) - len(b)
            diff, cost = difference(test_a["accuracy"], test_b["accuracy"]), ratio(time_a, time_b)
            detail = {"time_ratio": cost.estimate, "time_low": cost.low, "time_high": cost.high,
                      "fastest": fastest, "accuracy_a": test_a["accuracy"].mean(),
                      "accuracy_b": test_b["accuracy"].mean(), "fresh_seeds": bool(on_fresh),
                      "chooser": chooser, "chosen_a": a[chooser].mean(), "chosen_b": b[chooser].mean(),
                      "diverged_a": int(left_a), "diverged_b": int(left_b),
                      "time_a": float(np.mean(time_a)), "time_b": float(np.mean(time_b)), "timed": timed,
                      "fixed_cost_dominated": bool(min(np.mean(time_a), np.mean(time_b)) < FIXED_COST_FLOOR_S),
                      "fixed_cost_floor_s": FIXED_COST_FLOOR_S}
            out.append(Comparison.of(diff.__dict__, regime=regime, claim=RuntimeAccuracy.name,
                                     label=f"best of {top} vs best of {other}", subject=top, reference=other,
                                     unit="accuracy", detail=detail))
    return out
