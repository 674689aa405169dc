"""Findings: what the studies in hand say about each claim of Liu et al. (2018) and DLBench, per regime (native
first): one entry per claim with a verdict computed from the data, its effect size, 95% interval, Holm-corrected
test, seeds and trials, the anchor of its figure and one plain sentence made from the numbers; and beneath each
claim the comparisons it rests on, each with its own sentence.

Claims and their comparisons:
- dataset transfer ("defaults do not transfer across datasets"): a framework's own default on a dataset it
  was not tuned for, against the best configuration known there (`transfer.transfer_comparisons`, "datasets");
- framework transfer ("... nor across frameworks"): framework A's default run on B, against the same default
  on A and against B's own default ("frameworks");
- robustness ("frameworks differ in robustness"): two frameworks' white-box accuracy relative to clean
  accuracy, only where their clean accuracies agree within a margin (`robustness.robustness_comparisons`);
- runtime-accuracy ("accuracy costs runtime"): the frameworks on the regime's frontier, and the best
  configuration (chosen on validation accuracy, mean over seeds) of the most accurate framework against that
  of each other one: the difference in test accuracy, and its cost, the ratio of train times.

Statistics (`intervals`): each comparison is Welch's difference with its 95% interval and two-sided p; the
p-values of one call form one family, corrected by Holm (`p_holm`). A comparison is "lower" or "higher"
(subject against reference) where p_holm < ALPHA, "equivalent" where its interval lies within +-`effect` (the
stated effect: 0.02 of accuracy, or of accuracy relative to clean), else "inconclusive", with `seeds_needed`:
seeds per side for a two-sample t test to detect `effect` with 80% power at the family's strictest Holm level
(ALPHA / number of tests), the spread taken from the data (and `seeds_for_observed`, the seeds to detect a
difference as large as the one observed, where that is larger). Under 3 seeds on a side there is no interval and no
test. A claim is "supported" where a comparison shows the claimed effect, "not supported" where every
comparison is equivalent (or, for the runtime claim, the most accurate framework is also the fastest),
"inconclusive" otherwise, "not tested" where the studies hold no comparison for it. Its numbers are those of
its headline comparison: the largest effect in the claimed direction.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.intervals import difference, holm, ratio, seeds_needed
from sensitivity.analysis.table import REGIME, NotEnoughData, regime_position, regimes_of, trained, trials_table

EFFECT, ALPHA = 0.02, 0.05
CLAIMS = {"dataset transfer": "defaults do not transfer across datasets",
          "framework transfer": "defaults do not transfer across frameworks",
          "robustness": "frameworks differ in robustness",
          "runtime-accuracy": "more accuracy costs more runtime"}
ANCHORS = {"dataset transfer": "transfer", "framework transfer": "transfer", "robustness": "robustness",
           "runtime-accuracy": "frontier"}
ENTRY = [REGIME, "claim", "label", "subject", "reference", "estimate", "low", "high", "unit", "p", "n_a", "n_b",
         "sd", "budget_scale", "compared", "detail"]
COMPARISONS = [REGIME, "claim", "label", "subject", "reference", "verdict", "estimate", "low", "high", "unit", "p",
               "p_holm", "n_a", "n_b", "seeds_needed", "seeds_for_observed", "budget_scale", "anchor", "sentence"]
CLAIM_COLUMNS = [REGIME, "claim", "verdict", "estimate", "low", "high", "unit", "p_holm", "n_a", "n_b", "n_trials",
                 "n_comparisons", "seeds_needed", "anchor", "sentence"]


class Findings(NamedTuple):
    claims: pd.DataFrame  # one row per regime and claim (CLAIM_COLUMNS)
    comparisons: pd.DataFrame  # one row per comparison (COMPARISONS, then `detail`: its own record)


def findings(table, others=(), effect: float = EFFECT) -> Findings:
    """The findings of the main study `table` (its frontier) and of `others` (studies of `sensitivity transfer`
    and robustness records), read together. Those of a study alone are cached beside its table
    (`trial_rows.cached_beside`), with their records (`findings_records`): `sensitivity findings` after a
    report reads the report's."""
    from sensitivity.analysis.findings_records import cache_name
    from sensitivity.sweep.trial_rows import cached_beside

    table = trials_table(table)
    if others:
        return _findings(table, [trials_table(o) for o in others], effect)
    found = cached_beside(table, f"findings-{effect!r}", lambda: _findings(table, [], effect))
    cached_beside(table, cache_name(effect), lambda: findings_records(found))
    return found


def findings_records(found: Findings) -> dict:
    """{"claims": [...], "comparisons": [...]}: the findings as JSON-ready records, which `sensitivity findings`
    prints (`findings_records.findings_text`) or prints as JSON."""
    return {"claims": as_records(found.claims, CLAIM_COLUMNS),
            "comparisons": as_records(found.comparisons, COMPARISONS)}


def _findings(table: pd.DataFrame, others: list, effect: float) -> Findings:
    sources = [table, *others]
    comparisons = compare(sources, effect)
    # the main study's regimes and those any comparison has (an ablation study's knobs are not claims)
    regimes = regimes_of(pd.concat([table[[REGIME]], comparisons[[REGIME]]]))
    claims = [_claim(regime, claim, comparisons[comparisons[REGIME].eq(regime) & comparisons["claim"].eq(claim)],
                     effect) for regime in regimes for claim in CLAIMS]
    return Findings(pd.DataFrame(claims, columns=CLAIM_COLUMNS), comparisons)


def compare(sources: list, effect: float = EFFECT) -> pd.DataFrame:
    """Every comparison of the claims, with Holm's correction over all of them, verdicts and sentences."""
    entries = _transfer_entries(sources) + _robustness_entries(sources) + _tradeoff_entries(sources[0])
    frame = pd.DataFrame(entries, columns=ENTRY)
    frame["p_holm"] = holm([_none(p) for p in frame["p"]])
    tests = int(frame["p_holm"].notna().sum())
    frame["anchor"] = frame["claim"].map(ANCHORS)
    frame["verdict"] = [_verdict(row, effect) for row in frame.to_dict("records")]
    alpha = ALPHA / max(1, tests)
    frame["seeds_needed"] = pd.array([seeds_needed(effect, sd, alpha) if v == "inconclusive" else None
                                      for v, sd in zip(frame["verdict"], frame["sd"])], dtype="Int64")
    frame["seeds_for_observed"] = pd.array([  # were the difference as large as observed
        seeds_needed(abs(e), sd, alpha) if v == "inconclusive" and abs(e) > effect else None
        for v, e, sd in zip(frame["verdict"], frame["estimate"].fillna(0), frame["sd"])], dtype="Int64")
    frame["sentence"] = [_comparison_sentence(row, effect) for row in frame.to_dict("records")]
    order = frame[REGIME].map(regime_position) * 10 + frame["claim"].map(list(CLAIMS).index)
    frame = frame.assign(order=order).sort_values("order", kind="stable", ignore_index=True)[COMPARISONS + ["detail"]]
    frame.attrs["effect"] = effect
    return frame


def _verdict(row: dict, effect: float) -> str:
    if not row["compared"]:
        return "not compared"
    if row["unit"] == "frontier":
        return "described"
    if _none(row["p_holm"]) is not None and row["p_holm"] < ALPHA:
        return "lower" if row["estimate"] < 0 else "higher"
    if _none(row["low"]) is not None and -effect <= row["low"] and row["high"] <= effect:
        return "equivalent"
    return "inconclusive"


def _none(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _entry(regime, claim, label, subject, reference, diff, unit, budget=None, compared=True, detail=None) -> dict:
    return {REGIME: regime, "claim": claim, "label": label, "subject": subject, "reference": reference,
            "estimate": diff["estimate"], "low": _none(diff["low"]), "high": _none(diff["high"]), "unit": unit,
            "p": _none(diff["p"]), "n_a": int(diff["n_a"]), "n_b": int(diff["n_b"]), "sd": _none(diff["sd"]),
            "budget_scale": _none(budget), "compared": compared, "detail": detail}


def _transfer_entries(sources: list) -> list:
    from sensitivity.analysis.transfer import richest_transfer, transfer_comparisons

    try:
        source, _ = richest_transfer(sources)
    except NotEnoughData:
        return []
    out = []
    for row in transfer_comparisons(source, references=[s for s in sources if s is not source]).to_dict("records"):
        if row["question"] == "datasets":
            label = f"{row['framework']}: {row['default']} on {row['dataset']} vs the best known there"
            out.append(_entry(row[REGIME], "dataset transfer", label, row["subject"], row["reference"], row,
                              "accuracy", row["budget_scale"], detail=row))
        else:
            home = row["reference"].startswith(row["default"] + " ")
            label = (f"{row['dataset']}: {row['source_framework']}'s default on {row['framework']} vs "
                     + (f"on {row['source_framework']}" if home else f"{row['framework']}'s own"))
            out.append(_entry(row[REGIME], "framework transfer", label, row["subject"], row["reference"], row,
                              "accuracy", row["budget_scale"], detail={**row, "home": home}))
    return out


def _robustness_entries(sources: list) -> list:
    from sensitivity.analysis.robustness import robustness_comparisons

    for source in sources:
        try:
            rows = robustness_comparisons(source)
        except NotEnoughData:
            continue
        return [_entry(row[REGIME], "robustness", f"{row['dataset']}, {row['attack'].upper()} eps {row['eps']:g}: "
                       f"{row['framework_a']} vs {row['framework_b']}", row["framework_a"], row["framework_b"], row,
                       "relative accuracy", compared=bool(row["comparable"]), detail=row)
                for row in rows.to_dict("records")]
    return []


def _tradeoff_entries(table: pd.DataFrame) -> list:
    from sensitivity.analysis.frontier import runtime_accuracy_frontier
    from sensitivity.analysis.seeds import best_configurations

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
        out.append(_entry(regime, "runtime-accuracy", "frontier", on, "", none, "frontier",
                          detail={"frontier": counts.to_dict(), "fastest": fastest,
                                  "n_trials": int(rows[REGIME].eq(regime).sum())}))
        seeds = {fw: rows[rows[REGIME].eq(regime) & rows["framework"].eq(fw) & rows["config_id"].eq(cid)]
                 for fw, cid in zip(chosen["framework"], chosen["best_config_id"])}
        if len(seeds) < 2:
            continue
        chooser = "val_accuracy" if rows["val_accuracy"].notna().any() else "accuracy"
        top = max(seeds, key=lambda fw: seeds[fw][chooser].mean())
        for other in sorted(fw for fw in seeds if fw != top):
            a, b = seeds[top], seeds[other]
            diff, cost = difference(a["accuracy"], b["accuracy"]), ratio(a["train_time_s"], b["train_time_s"])
            out.append(_entry(regime, "runtime-accuracy", f"best of {top} vs best of {other}", top, other,
                              diff.__dict__, "accuracy", detail={
                                  "time_ratio": cost.estimate, "time_low": cost.low, "time_high": cost.high,
                                  "fastest": fastest, "accuracy_a": a["accuracy"].mean(),
                                  "accuracy_b": b["accuracy"].mean(), "time_a": a["train_time_s"].mean(),
                                  "time_b": b["train_time_s"].mean()}))
    return out


# sentences -------------------------------------------------------------------------------------------------

def _signed(x) -> str:
    return f"{x:+.3f}"


def _numbers(row: dict) -> str:
    """"-0.104 [-0.128, -0.080] (95% interval, uncorrected; Holm p=0.003; 5 and 5 seeds)" or "-0.104 (2 and 2
    seeds: no interval, no test)". The interval is one comparison's, the p-value corrected over all of them: an
    interval clear of 0 with Holm p above 0.05 is not an effect."""
    if _none(row["low"]) is None:
        return f"{_signed(row['estimate'])} ({row['n_a']} and {row['n_b']} seeds: no interval, no test)"
    return (f"{_signed(row['estimate'])} [{_signed(row['low'])}, {_signed(row['high'])}] "
            f"(95% interval, uncorrected; Holm p={row['p_holm']:.2g}; {row['n_a']} and {row['n_b']} seeds)")


def _needed(row: dict, effect: float) -> str:
    """How many seeds would settle an inconclusive comparison: to detect the stated effect, and one as large
    as observed where that is larger."""
    needed, observed = row["seeds_needed"], row.get("seeds_for_observed")
    if needed is None or needed is pd.NA:
        text = f"the spread is unknown or too large to say how many seeds would detect a {effect:g} difference"
    else:
        text = f"about {int(needed)} seeds per side would detect a {effect:g} difference with 80% power"
    known = needed is not None and needed is not pd.NA
    if observed is not None and observed is not pd.NA and (not known or observed < needed):
        text += f" ({int(observed)} would detect one as large as this, {abs(row['estimate']):.3f})"
    return text


def _budget(row: dict, long: bool = False) -> str:
    scale = _none(row.get("budget_scale"))
    if scale is None or scale >= 1:
        return ""
    if long:
        return (f"; the defaults ran as little as {scale:.2g} of their published training steps, so this measures "
                "early learning, not the defaults as published")
    return f", at {scale:.2g} of the published training steps"


def _comparison_sentence(row: dict, effect: float) -> str:
    """One sentence per comparison: what was compared, the difference with its interval, the verdict."""
    verdict, detail = row["verdict"], row["detail"] or {}
    if verdict == "not compared":
        return (f"{row['label']}: not compared, their {detail['note']}, so a difference under attack would reflect "
                "training, not the framework.")
    if verdict == "described":
        return f"On the frontier: {row['subject'] or 'no framework'}."
    ending = {"lower": "lower", "higher": "higher", "equivalent": f"no difference beyond +-{effect:g}",
              "inconclusive": "inconclusive: " + _needed(row, effect)}[verdict]
    extra = ""
    if row["claim"] == "runtime-accuracy":
        extra = f", at {detail['time_ratio']:.2f}x the train time"
    return f"{row['label']}: {_numbers(row)}{extra}{_budget(row)}; {ending}."


QUESTIONS = {"dataset transfer": "whether defaults transfer across datasets",
             "framework transfer": "whether defaults transfer across frameworks",
             "robustness": "whether frameworks differ in robustness",
             "runtime-accuracy": "whether more accuracy costs more runtime"}
NO_EFFECT = {"dataset transfer": "defaults transfer across datasets within +-{effect:g}",
             "framework transfer": "defaults transfer across frameworks within +-{effect:g}",
             "robustness": "frameworks keep the same share of their clean accuracy under attack within +-{effect:g}"}


def _headline(row: dict) -> str:
    """The headline comparison in words, with its numbers."""
    detail, claim = row["detail"], row["claim"]
    if claim == "dataset transfer":
        source = detail.get("source_framework") or detail["framework"]
        owner = f"{source}'s default {detail['default']} (tuned on {detail['source_dataset']})"
        if source != detail["framework"]:
            owner += f", run on {detail['framework']},"
        return (f"{owner} against the best configuration known on {detail['dataset']} ({_name(row['reference'])}): "
                f"{_numbers(row)}")
    if claim == "framework transfer":
        against = (f"the same default on {detail['source_framework']}" if detail["home"] else
                   f"{detail['framework']}'s own default {_name(row['reference'])}")
        return (f"{detail['source_framework']}'s default {detail['default']} run on {detail['framework']} "
                f"({detail['dataset']}) against {against}: {_numbers(row)}")
    return (f"{detail['framework_a']} against {detail['framework_b']} on {detail['dataset']} under "
            f"{detail['attack'].upper()} at eps {detail['eps']:g}, share of clean accuracy kept "
            f"{detail['relative_a']:.2f} against {detail['relative_b']:.2f}: {_numbers(row)}")


def _name(reference: str) -> str:
    """"jax-default" of "default jax-default on torch, digits"."""
    return reference.split(" on ")[0].removeprefix("default ")


def _claim(regime: str, claim: str, rows: pd.DataFrame, effect: float) -> dict:
    """The claim's entry: verdict, headline comparison, sentence (see the module)."""
    base = {REGIME: regime, "claim": claim, "anchor": ANCHORS[claim], "n_comparisons": 0, "n_trials": 0,
            "estimate": np.nan, "low": None, "high": None, "unit": "", "p_holm": None, "n_a": 0, "n_b": 0,
            "seeds_needed": None}
    if claim == "runtime-accuracy":
        return {**base, **_runtime_claim(regime, rows, effect)}
    tested = rows[rows["verdict"].ne("not compared")]
    if tested.empty:
        why = ("every pair of frameworks differs in clean accuracy by more than the margin"
               if len(rows) else "the studies hold no comparison for it (" + {
                   "dataset transfer": "run sensitivity transfer on two or more datasets",
                   "framework transfer": "run sensitivity transfer on two or more frameworks",
                   "robustness": "run sensitivity robustness"}[claim] + ")")
        example = f" (e.g. {rows.iloc[0]['label']}: {rows.iloc[0]['detail']['note']})" if len(rows) else ""
        return {**base, "verdict": "not tested", "n_comparisons": len(rows),
                "sentence": f"{regime.capitalize()}: {QUESTIONS[claim]} is not tested: {why}{example}."}
    claimed = tested[tested["verdict"].eq("lower")] if claim != "robustness" else tested[
        tested["verdict"].isin(("lower", "higher"))]
    if len(claimed):
        verdict, head = "supported", claimed.loc[claimed["estimate"].abs().idxmax()]
    elif tested["verdict"].eq("equivalent").all():
        verdict, head = "not supported", tested.loc[tested["estimate"].abs().idxmax()]
    else:
        verdict = "inconclusive"
        open_ = tested[tested["verdict"].eq("inconclusive")]  # the largest open effect in the claimed direction
        head = open_.loc[open_["estimate"].abs().idxmax() if claim == "robustness" else open_["estimate"].idxmin()]
    head = head.to_dict()
    counts = tested["verdict"].value_counts()
    tally = ", ".join(f"{k} {name}" for name, k in counts.items())
    skipped = len(rows) - len(tested)
    lead = {"supported": f"{CLAIMS[claim]} here", "not supported": NO_EFFECT[claim].format(effect=effect),
            "inconclusive": f"not settled {QUESTIONS[claim]}"}[verdict]
    sentence = (f"{regime.capitalize()}: {lead}: {_headline(head)}"
                + (f"; {_needed(head, effect)}" if verdict == "inconclusive" else "")
                + f" ({len(tested)} comparison{'s' if len(tested) != 1 else ''}: {tally}"
                + (f"; {skipped} not compared, their clean accuracies differ by more than the margin" if skipped
                   else "") + ")" + _budget(head, long=True) + ".")
    return {**base, "verdict": verdict, "estimate": head["estimate"], "low": head["low"], "high": head["high"],
            "unit": head["unit"], "p_holm": _none(head["p_holm"]), "n_a": int(head["n_a"]), "n_b": int(head["n_b"]),
            "n_trials": int((tested["n_a"] + tested["n_b"]).sum()), "n_comparisons": len(rows),
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None, "sentence": sentence}


def _runtime_claim(regime: str, rows: pd.DataFrame, effect: float) -> dict:
    frontier = rows[rows["unit"].eq("frontier")]
    if frontier.empty:
        return {"verdict": "not tested", "sentence": f"{regime.capitalize()}: {CLAIMS['runtime-accuracy']}? Not "
                                                     "tested: no trial of this regime finished with status ok."}
    detail = frontier.iloc[0]["detail"]
    pairs = rows[rows["unit"].ne("frontier")]
    on = f"{regime.capitalize()}: on the runtime-accuracy frontier: {frontier.iloc[0]['subject']}"
    base = {"n_trials": detail["n_trials"], "n_comparisons": len(pairs)}
    if pairs.empty:
        return {**base, "verdict": "not tested", "sentence": on + "; one framework only, no trade-off to judge."}
    top, fastest = pairs.iloc[0]["subject"], detail["fastest"]
    if top == fastest:  # the fastest is also the most accurate: against its closest competitor
        head = pairs.loc[pairs["estimate"].idxmin()]
        verdict = "not supported" if head["verdict"] in ("higher", "equivalent") else "inconclusive"
        ending = {"not supported": f"{top} is also the fastest on the frontier: no trade-off",
                  "inconclusive": f"{top} is also the fastest on the frontier, but whether it is more accurate is "
                                  "inconclusive: " + _needed(head, effect)}[verdict]
    else:
        head = pairs[pairs["reference"].eq(fastest)]
        head = (head if len(head) else pairs).iloc[0]
        verdict = {"higher": "supported", "equivalent": "not supported"}.get(head["verdict"], "inconclusive")
        ending = {"supported": f"{top} buys its accuracy with runtime",
                  "not supported": f"{head['reference']} is as accurate within +-{effect:g} and faster",
                  "inconclusive": "inconclusive: " + _needed(head, effect)}[verdict]
    other = head["reference"] + (", the fastest on the frontier" if head["reference"] == fastest else "")
    sentence = (f"{on}; the best configuration of {top}, the most accurate framework "
                f"({head['detail']['accuracy_a']:.3f}), against that of {other} ({head['detail']['accuracy_b']:.3f}): "
                f"{_numbers(head)}, at {head['detail']['time_ratio']:.2f}x its train time; {ending}.")
    return {**base, "verdict": verdict, "estimate": head["estimate"], "low": head["low"], "high": head["high"],
            "unit": "accuracy", "p_holm": _none(head["p_holm"]), "n_a": int(head["n_a"]), "n_b": int(head["n_b"]),
            "seeds_needed": head["seeds_needed"] if verdict == "inconclusive" else None, "sentence": sentence}


def as_records(frame: pd.DataFrame, columns) -> list:
    """JSON-ready records of `columns` (NaN and pandas' NA as None, numpy scalars as Python's)."""
    out = []
    for record in frame[list(columns)].astype(object).to_dict("records"):
        out.append({k: (None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in record.items()})
    return out


def plot_findings(found: Findings):
    """A forest plot of the comparisons: difference and 95% interval, one row of panels per claim, one column per
    regime; the stated effect shaded around zero; hollow where there is no interval."""
    from sensitivity.analysis.style import finish, go, make_subplots, regime_title

    frame = found.comparisons if isinstance(found, Findings) else found
    shown = frame[frame["unit"].ne("frontier") & frame["estimate"].notna()]
    if shown.empty:
        raise NotEnoughData("findings need comparisons: run sensitivity transfer, robustness, or a sweep of two "
                            "or more frameworks")
    claims = [c for c in CLAIMS if c in set(shown["claim"])]
    regimes = regimes_of(shown)
    sizes = [max(1, shown.loc[shown["claim"].eq(c), "label"].nunique()) for c in claims]
    height = 160 + 26 * sum(sizes) + 120 * len(claims)
    fig = make_subplots(rows=len(claims), cols=len(regimes), row_heights=sizes, shared_yaxes=True,
                        vertical_spacing=min(0.9 / max(1, len(claims) - 1), 110 / (height - 190)),
                        horizontal_spacing=0.03,
                        subplot_titles=[f"{c}, {r}" for c in claims for r in regimes])
    colours = {"lower": "#d62728", "higher": "#2ca02c", "equivalent": "#1f77b4", "inconclusive": "#7f7f7f"}
    for i, claim in enumerate(claims, start=1):
        labels = list(dict.fromkeys(shown[shown["claim"].eq(claim)]["label"]))
        for j, regime in enumerate(regimes, start=1):
            part = shown[shown["claim"].eq(claim) & shown[REGIME].eq(regime)]
            for has, points in part.groupby(part["low"].notna()):  # no error bar where there is no interval
                error = dict(type="data", symmetric=False, array=points["high"].astype(float) - points["estimate"],
                             arrayminus=points["estimate"] - points["low"].astype(float)) if has else None
                fig.add_trace(go.Scatter(
                    x=points["estimate"], y=points["label"], mode="markers", showlegend=False, error_x=error,
                    marker=dict(size=9, color=points["verdict"].map(colours).fillna("#7f7f7f"),
                                symbol="circle" if has else "circle-open", line=dict(width=2)),
                    hovertext=points["sentence"], hoverinfo="text"), row=i, col=j)
            effect = frame.attrs.get("effect", EFFECT)
            fig.add_vrect(x0=-effect, x1=effect, fillcolor="#1f77b4", opacity=0.1, line_width=0, row=i, col=j)
            fig.add_vline(x=0, line=dict(color="black", width=1), row=i, col=j)
        fig.update_yaxes(automargin=True, categoryorder="array", categoryarray=labels[::-1], row=i, col=1)
        fig.update_xaxes(title=dict(text=UNITS[claim], font=dict(size=11)), row=i)
    fig.update_xaxes(zeroline=False)
    title = regime_title("Findings: each comparison's difference and 95% interval", regimes)
    fig = finish(fig, title + "<br><sub>red: lower; green: higher; blue: equivalent, within the shaded effect; "
                              "grey: inconclusive; hollow: under 3 seeds, no interval</sub>", height)
    return fig.update_layout(margin=dict(t=130))


UNITS = {"dataset transfer": "default minus best known (accuracy)",
         "framework transfer": "moved default minus reference (accuracy)",
         "robustness": "difference in accuracy relative to clean",
         "runtime-accuracy": "most accurate framework's best minus another's (accuracy)"}
