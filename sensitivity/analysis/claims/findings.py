"""Findings: what the studies in hand say about each claim of Liu et al. (2018) and DLBench, per regime (native
first): one entry per claim with a verdict computed from the data, its effect with a 95% interval, the seeds
and trials behind it, the anchor of its figure and plain sentences made from the numbers (`sentences`); and
beneath each claim the comparisons it rests on.

Claims and their comparisons:
- dataset transfer ("defaults do not transfer across datasets"): crossovers (`crossover`): on one framework,
  the configurations tuned for datasets A and B each run on both; the effect is the home advantage. A
  crossover between two halves of one dataset is the placebo: it is reported beside the claim, never in it;
- framework transfer ("... nor across frameworks"): each default on each other framework against itself on its
  home framework (`transfer.transfer_comparisons`), every pair; the canonical regime is the control;
- robustness ("frameworks differ in robustness"): the same configuration on two frameworks, the area under
  the robust-accuracy curve where their clean accuracies agree within a margin (`robustness_pairs`), judged
  against the canonical control on the same pairs (`robustness_claim`);
- runtime-accuracy ("accuracy costs runtime"): the frameworks on the regime's frontier, and the best
  configuration (chosen on validation accuracy, mean over seeds) of the most accurate framework against that
  of each other one: the difference in test accuracy, and its cost, the ratio of train times.

Statistics (`intervals`): each comparison's difference has a 95% interval and a two-sided p; Holm's correction
runs within each claim (`p_holm`), so one claim's comparisons never change another's verdict. A comparison is
"lower" or "higher" (subject against reference) where p_holm < ALPHA, "equivalent" where the two one-sided
tests put it within the claim's margin (TOST, p < ALPHA), else "inconclusive", with `seeds_needed`: seeds per
side for 80% power to detect the margin at the claim's strictest Holm level, planned with the SD's 80% upper
confidence bound and the test set's share of the variance. The seed is the unit: every test's degrees of
freedom come from the seeds; under 3 seeds on a side, or with no spread, there is no interval and the test is
an exact one over the seeds, and a comparison whose exact test cannot reach ALPHA after Holm with its seeds is
"not testable" (`decidable`), with the seeds that could (`seeds_to_test`). Each claim has a one-line `headline`
(verdict, effect [interval], seeds, budget, control) beside its full `sentence`.

The transfer claims are judged at each definition of the published budget apart, the source's epochs and its
steps (Holm within each), then combined (`budget_verdicts`): "supported" only where the claim holds under both,
on converged runs; `by_budget` holds each definition's verdict, or the command that runs it.
They are tested on runs at the published budget only: a comparison whose runs were cut
(budget_scale < 1) is "cut budget", and a claim with nothing else is "not tested at the published budget".
Their verdict rests on the summary of the claim's comparisons (`intervals.summary`, random effects): "not
supported" where it is equivalent to 0 within the margin (TOST) and no comparison differs in the claimed
direction (where one does, the answer depends on the comparison: "inconclusive"), "supported" where it lies
in the claimed direction (p < ALPHA) and the placebo, if any, shows nothing, else "inconclusive"; how many
comparisons differ is said beside it, and the knob an ablation study finds for the largest. The margin is
`effect` (0.02 of accuracy) a dataset: 2 x effect for a home advantage, which sums two differences (effect
for a crossover of one side, `crossover`). Runtime keeps its headline comparison: the largest effect in the
claimed direction.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.tables.ablation import ablation_path
from sensitivity.analysis.claims.comparisons import ENTRY, TRANSFER, gather, none_if_missing
from sensitivity.analysis.claims.text import cache_name
from sensitivity.analysis.statistics import MIN_FOR_INTERVAL, holm, min_permutation_p, sd_upper, seeds_needed, tost
from sensitivity.analysis.claims.robustness import robustness_claim
from sensitivity.analysis.claims.transfer import margin_of, pooled_transfers, transfer_claim
from sensitivity.analysis.tables.runtime import first_same_configuration_times, parallel_ratios, ratios_text
from sensitivity.analysis.table import REGIME, NotEnoughData, regime_position, regimes_of, trained, trials_table
from sensitivity.studies.trial_rows import cached_beside

EFFECT, ALPHA = 0.02, 0.05
CLAIMS, QUESTIONS = sentences.CLAIMS, sentences.QUESTIONS
ANCHORS = {"dataset transfer": "transfer", "framework transfer": "transfer", "robustness": "robustness",
           "runtime-accuracy": "frontier"}
COMPARISONS = [REGIME, "claim", "role", "label", "subject", "reference", "verdict", "estimate", "low", "high", "unit",
               "p", "p_holm", "p_tost", "test", "df", "df_max", "p_floor", "n_a", "n_b", "seeds_needed",
               "seeds_for_observed", "budget_scale", "budget", "converged", "anchor", "sentence"]
CLAIM_COLUMNS = [REGIME, "claim", "verdict", "estimate", "low", "high", "unit", "p", "p_holm", "p_tost", "margin",
                 "n_a", "n_b", "n_trials", "n_comparisons", "n_tested", "n_differ", "budget_scale", "seeds_needed",
                 "budgets", "by_budget", "kernel_warning", "control", "anchor", "headline", "sentence"]


class Findings(NamedTuple):
    """Fields:
    - claims: one row per regime and claim (CLAIM_COLUMNS)
    - comparisons: one row per comparison (COMPARISONS, then `detail`: its own record)
    """
    claims: pd.DataFrame
    comparisons: pd.DataFrame


def findings(table, others=(), effect: float = EFFECT) -> Findings:
    """The findings of the main study `table` (its frontier) and of `others` (studies of `sensitivity transfer`,
    `crossover`, and robustness records), read together. Those of a study alone are cached beside its table
    (`trial_rows.cached_beside`), with their records (`findings_records`): `sensitivity findings` after a
    report reads the report's."""
    table = trials_table(table)
    if others:
        return _findings(table, [trials_table(o) for o in others], effect)
    found = cached_beside(table, f"findings-{effect!r}", lambda: _findings(table, [], effect))
    cached_beside(table, cache_name(effect), lambda: findings_records(found))
    return found


def study_findings_records(study, others=(), effect: float = EFFECT) -> dict:
    """`findings_records` of the findings of `study` with `others`: for a study alone, the records a report cached
    beside its table, read without the findings' frames."""
    table = trials_table(study)
    if others:
        return findings_records(findings(table, others, effect))
    return cached_beside(table, cache_name(effect), lambda: findings_records(findings(table, effect=effect)))


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
    checks = _attack_checks(sources)
    timing = _timing_note(sources)
    pooled = pooled_transfers(sources)
    claims = [_claim(regime, claim, comparisons[comparisons[REGIME].eq(regime) & comparisons["claim"].eq(claim)],
                     comparisons[comparisons["claim"].eq(claim)], effect, checks, timing, pooled)
              for regime in regimes for claim in CLAIMS]
    claims = pd.DataFrame(claims, columns=CLAIM_COLUMNS)
    mixed = kernel_warning(sources)
    tested = claims["verdict"].ne("not tested")
    claims["kernel_warning"] = [mixed if is_tested else None for is_tested in tested]
    if mixed:  # a difference may then be the machines' kernels, not the frameworks'
        claims.loc[tested, "sentence"] = claims.loc[tested, "sentence"].str.rstrip(".") + "; " + mixed + "."
    claims["headline"] = [sentences.headline(row) for row in claims.to_dict("records")]
    attributed = _ablation_note(sources)
    if attributed:  # the knob that carries the largest native framework-transfer difference, where ablated
        at = claims[REGIME].eq("native") & claims["claim"].eq("framework transfer") & claims["verdict"].ne("not tested")
        claims.loc[at, "sentence"] = claims.loc[at, "sentence"].str.rstrip(".") + attributed + "."
    return Findings(claims, comparisons)


def _timing_note(sources: list) -> dict:
    """{regime: what its runtime claim's times rest on}: the sweep's concurrency against the same configurations
    timed alone, and the same configuration's time to target on every framework (`runtime`)."""

    ratios = ratios_text(parallel_ratios(sources[0], sources[1:]))
    times, study = first_same_configuration_times(sources)
    return {"": ratios, **{regime: ratios + _times_text(part, study)
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


def _attack_checks(sources: list) -> pd.DataFrame:
    """The attack checks (`robustness.robustness_checks`) of the first study with robustness records."""
    # lazy: plotly
    from sensitivity.analysis.tables.robustness import robustness_checks

    for source in sources:
        if source.attrs.get("robustness"):
            return robustness_checks(source)
    return pd.DataFrame(columns=[REGIME])


def kernel_set(summary: str) -> frozenset:
    """The libraries and instruction sets of a kernel summary ("oneDNN AVX2; OpenBLAS Haswell"), as a set: the
    order a process listed them in says nothing."""
    return frozenset(part.strip() for part in str(summary).split(";") if part.strip())


def kernel_warning(sources: list):
    """"the runs of mxnet come from hosts whose CPU kernels differ (a: ...; b: ...)" where a framework's trained
    runs across the studies record more than one set of kernels (`trial.kernels`; compared as sets), naming the
    hosts; else None."""
    frames = [trained(s)[[c for c in ("framework", "env_kernel_isa", "env_host") if c in s.columns]] for s in sources
              if {"framework", "env_kernel_isa"} <= set(s.columns)]
    if not frames:
        return None
    runs = pd.concat(frames).dropna(subset=["env_kernel_isa"])
    runs = runs.assign(kernels=runs["env_kernel_isa"].map(kernel_set),
                       host=runs["env_host"].fillna("unknown host") if "env_host" in runs else "unknown host")
    mixed = {}
    for framework, part in runs.groupby("framework"):
        if part["kernels"].nunique() > 1:
            by_host = part.groupby("host")["kernels"].agg(lambda k: sorted({"; ".join(sorted(x)) for x in k}))
            mixed[framework] = "; ".join(f"{host}: {' / '.join(kinds)}" for host, kinds in by_host.items())
    if not mixed:
        return None
    listed = "; ".join(f"{fw} on {hosts}" for fw, hosts in sorted(mixed.items()))
    return (f"the runs of {', '.join(sorted(mixed))} come from hosts whose CPU kernels differ ({listed}): a "
            "difference may be the kernels', so compare runs of one host")


def _ablation_note(sources: list) -> str:
    """"; the ablation from tensorflow native to mxnet native (study S) puts the largest step at init: ..."."""

    for source in sources:
        if len((source.attrs.get("ablation") or {}).get("steps") or ()) < 2:
            continue
        try:
            path = ablation_path(source)
        except (NotEnoughData, KeyError, IndexError):  # a record this code did not write: no attribution
            continue
        steps = path[path["step"] > 0].dropna(subset=["delta"])
        if steps.empty:
            continue
        largest = steps.loc[steps["delta"].abs().idxmax()]
        return (f"; the ablation from {path.attrs['source']} to {path.attrs['target']} (study "
                f"{source.attrs.get('study')}, {path.attrs['seeds']} seeds a point) puts the largest step at "
                f"{largest['change']} ({largest['delta']:+.3f} validation accuracy)")
    return ""


def compare(sources: list, effect: float = EFFECT) -> pd.DataFrame:
    """Every comparison of the claims, Holm-corrected within each claim and budget definition, with verdicts and
    sentences."""
    entries = gather(sources)
    frame = pd.DataFrame(entries, columns=ENTRY)
    frame["family"] = frame["claim"] + "|" + frame["budget"].fillna("").astype(str)  # Holm's family
    frame["anchor"] = frame["claim"].map(ANCHORS)
    frame["counted"] = frame["compared"] & frame["role"].eq("comparison") & ~_cut(frame)
    frame["p_holm"] = None
    frame["p_tost"] = [tost(e, se, margin_of(c, effect, d), df) if ok else None for e, se, c, df, ok, d in zip(
        frame["estimate"], frame["se"], frame["claim"], frame["df"], frame["compared"], frame["detail"])]
    for family, part in frame[frame["counted"]].groupby("family"):
        frame.loc[part.index, "p_holm"] = pd.Series(holm([none_if_missing(p) for p in part["p"]]), index=part.index,
                                                    dtype=object)
    tests = frame[frame["p_holm"].notna()].groupby("family").size().to_dict()
    frame["verdict"] = [_verdict(row, tests.get(row["family"], 1)) for row in frame.to_dict("records")]
    needed, observed = [], []
    for row in frame.to_dict("records"):
        alpha = ALPHA / max(1, tests.get(row["family"], 1))
        if row["verdict"] == "not testable":
            needed.append(seeds_to_test(row["test"], alpha))
            observed.append(None)
            continue
        sd = sd_upper(row["sd"], max(1, row["n_a"] + row["n_b"] - 2)) if row["verdict"] == "inconclusive" else None
        margin, test_var = margin_of(row["claim"], effect, row["detail"]), none_if_missing(row["test_var"]) or 0.0
        needed.append(seeds_needed(margin, sd, alpha, test_var=test_var) if sd is not None else None)
        size = abs(row["estimate"]) if row["estimate"] == row["estimate"] else 0.0
        observed.append(seeds_needed(size, sd, alpha, test_var=test_var) if sd is not None and size > margin else None)
    frame["seeds_needed"] = pd.array(needed, dtype="Int64")
    frame["seeds_for_observed"] = pd.array(observed, dtype="Int64")
    frame["sentence"] = [sentences.comparison(row, margin_of(row["claim"], effect, row["detail"]))
                         for row in frame.to_dict("records")]
    order = frame[REGIME].map(regime_position) * 10 + frame["claim"].map(list(CLAIMS).index)
    frame = frame.assign(order=order).sort_values("order", kind="stable", ignore_index=True)[COMPARISONS + ["detail"]]
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


def _cut(frame: pd.DataFrame) -> pd.Series:
    """Transfer comparisons whose runs were cut below their published budget."""
    scale = pd.to_numeric(frame["budget_scale"], errors="coerce")
    return frame["claim"].isin(TRANSFER) & scale.lt(1 - 1e-6)


def _verdict(row: dict, tests: int = 1) -> str:
    if not row["compared"]:
        return "not compared"
    if row["unit"] == "frontier":
        return "described"
    if row["claim"] in TRANSFER and none_if_missing(row["budget_scale"]) is not None and row["budget_scale"] < 1 - 1e-6:
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


def _claim(regime: str, claim: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
           checks: pd.DataFrame, timing: dict, pooled=None) -> dict:
    """The claim's entry: verdict, effect, sentence (see the module)."""
    base = {REGIME: regime, "claim": claim, "anchor": ANCHORS[claim], "n_comparisons": len(rows), "n_trials": 0,
            "estimate": np.nan, "low": None, "high": None, "unit": "", "p": None, "p_holm": None, "p_tost": None,
            "margin": margin_of(claim, effect), "n_a": 0, "n_b": 0, "n_tested": 0, "n_differ": 0,
            "budget_scale": None, "seeds_needed": None, "budgets": None, "by_budget": None, "control": None}
    if claim == "runtime-accuracy":
        return {**base, **_runtime_claim(regime, rows, effect, timing.get(regime, timing.get("", "")))}
    if claim in TRANSFER:
        return {**base, **transfer_claim(regime, claim, rows, every_regime, effect,
                                          pooled if claim == "framework transfer" else {})}
    checked = sentences.checks(checks[checks[REGIME].eq(regime)] if len(checks) else checks)
    return {**base, **robustness_claim(regime, rows, every_regime, effect, checked)}


def _runtime_claim(regime: str, rows: pd.DataFrame, effect: float, timing: str) -> dict:
    """More accuracy costs more runtime: the most accurate framework's best configuration against each other
    framework's. A pair supports it where the first is more accurate (Holm) and its train-time ratio's interval
    lies above 1; it goes against it where the two are equivalent in accuracy, or the first is more accurate and
    its ratio's interval lies below 1 (more accurate and faster). "Supported" where a pair supports it, "not
    supported" where every pair goes against it, else "inconclusive"."""
    frontier = rows[rows["unit"].eq("frontier")]
    if frontier.empty:
        return {"verdict": "not tested", "sentence": f"{regime.capitalize()}: {CLAIMS['runtime-accuracy']}? Not "
                                                     "tested: no trial of the main study (a sweep) in this regime "
                                                     "finished with status ok."}
    detail = frontier.iloc[0]["detail"]
    pairs = rows[rows["unit"].ne("frontier")]
    on = f"{regime.capitalize()}: on the runtime-accuracy frontier: {frontier.iloc[0]['subject']}"
    base = {"n_trials": detail["n_trials"], "n_comparisons": len(pairs), "n_tested": len(pairs)}
    if pairs.empty:
        return {**base, "verdict": "not tested", "sentence": on + "; one framework only, no trade-off to judge"
                                                              + timing + "."}
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
            "sentence": sentences.runtime_claim(on, verdict, head.to_dict(), judged[at], effect) + timing + "."}


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


def as_records(frame: pd.DataFrame, columns) -> list:
    """JSON-ready records of `columns` (NaN and pandas' NA as None, numpy scalars as Python's)."""
    out = []
    for record in frame[list(columns)].astype(object).to_dict("records"):
        out.append({k: (None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in record.items()})
    return out



UNITS = {"dataset transfer": "home advantage (accuracy, summed over the two datasets)",
         "framework transfer": "moved default minus at home (accuracy)",
         "robustness": "difference in accuracy relative to clean",
         "runtime-accuracy": "most accurate framework's best minus another's (accuracy)"}
