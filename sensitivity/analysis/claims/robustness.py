"""Claim "frameworks differ in robustness" (Liu et al. 2018), as Liu et al. asked it (issue 41): each framework's
own default as its users run it, at matched clean accuracy, on the examples of a surrogate that none of the
compared frameworks trained (the protocol's `surrogate`, jax in the main job), area under the robust-accuracy curve
(`tables.robustness_pairs`). The pairs the protocol registers before any attack (`primary`) are the claim's family
(Holm within the regime); without one, every pair of own defaults is.

- native (any regime but canonical): "supported" where a pair of the family differs at Holm p < ALPHA beyond the
  margin, and the canonical check did not fail; "not supported" where every pair is equivalent within the margin
  (TOST); "not testable" where no pair's exact test can reach ALPHA with its seeds (a sign-flip test over n
  paired seeds cannot go below 2 / 2^n: 0.0625 at 5); else "inconclusive". The same configuration on both
  frameworks is said beside it, as its decomposition: how much of the difference the frameworks' native choices
  carry. Nothing is subtracted: a canonical difference is a check, not a correction.
- canonical: the frameworks are identical by construction, so the regime checks the pipeline (attacks, matching,
  seeds) on the same configuration on every framework, against a tolerance the protocol declares before any
  attack (`control_tolerance`): "control held" unless a pair differs beyond it at Holm p < ALPHA, or beyond it with
  too few seeds for the test to reach ALPHA ("control failed", and then no native verdict is "supported"). It never
  says frameworks differ.

The attack checks (`tables.robustness.robustness_checks`: zero gradients, PGD no weaker than FGSM, accuracy at the
check's radius) are said with the verdict.
"""
from __future__ import annotations

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.sentences import numbers, signed
from sensitivity.analysis.statistics import ALPHA, REGIME, margin_of
from sensitivity.analysis.tables.robustness import robustness_checks
from sensitivity.analysis.tables.robustness_pairs import protocol_of, robustness_comparisons

CONTROL_COMMAND = "sensitivity robustness STUDY --semantics both (its models trained in both regimes)"


class Robustness:
    name = "robustness"
    statement = "frameworks differ in robustness"
    question = "whether frameworks differ in robustness"
    would_test = ("sensitivity robustness of the kept models of two or more frameworks (sensitivity transfer "
                  "--keep-checkpoints)")
    anchor = "robustness"
    unit = "difference in accuracy relative to clean"
    budgeted = False

    def margin(self, effect: float, detail=None) -> float:
        return margin_of(self.name, effect, detail)

    def comparisons(self, sources: list) -> list:
        """Every pair of frameworks of the first study with robustness records: the claim's own comparisons (matched
        clean accuracy, transfer attacks, the same configuration) and, beside them, the same pairs white-box and as
        trained, and each framework's own default."""
        for source in sources:
            rows = robustness_comparisons(source)
            if rows.empty:
                continue
            out = []
            for row in rows.to_dict("records"):
                what = {"own": "own defaults", "all": "all models"}.get(row["set_kind"], row["default"])
                state = "matched" if row["role"] == "matched" else "as trained"
                label = (f"{row['dataset']}, {what}, {state}, {row['attack'].upper()} {row['kind']}: "
                         f"{row['framework_a']} vs {row['framework_b']}")
                diff = {**row, "test_var": None}
                out.append(Comparison.of(diff, regime=row[REGIME], claim=self.name, label=label,
                                         subject=row["framework_a"], reference=row["framework_b"], unit="robust AUC",
                                         compared=bool(row["comparable"]) and row["method"] != "no examples",
                                         detail=row, role="comparison" if row["primary"] else "beside"))
            return out
        return []

    def context(self, sources: list) -> dict:
        """The attack checks of the first study with robustness records, and the canonical check's tolerance its
        protocol declared before any attack."""
        for source in sources:
            if source.attrs.get("robustness"):
                protocol = protocol_of(source)
                return {"checks": robustness_checks(source),
                        "tolerance": protocol.get("control_tolerance"), "margin": protocol.get("clean_margin")}
        return {"checks": pd.DataFrame(columns=[REGIME]), "tolerance": None, "margin": None}

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context: dict) -> dict:
        checks = context["checks"]
        checked = checks_words(checks[checks[REGIME].eq(regime)] if len(checks) else checks)
        tolerance = context["tolerance"] if context["tolerance"] is not None else effect
        return robustness_claim(regime, rows, every_regime, effect=effect, tolerance=tolerance,
                                declared=context["tolerance"] is not None, checked=checked)

    def comparison_words(self, row: dict) -> tuple:
        return "", ""


def robustness_claim(regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, *, effect: float,
                     tolerance: float, declared: bool, checked: str) -> dict:
    """The claim's entry in `regime` (see the module); `rows`: its comparisons in the regime, `every_regime`:
    in every regime; `tolerance`: the canonical check's (`declared`: by the protocol, before any attack);
    `checked`: the attack checks' sentence."""
    family = rows[rows["role"].eq("comparison")]
    tested = family[family["verdict"].ne("not compared")]
    checked = source_text(tested) + checked
    beside = rows[rows["role"].eq("beside") & rows["verdict"].ne("not compared")]
    if tested.empty:
        sentence = _not_compared(regime, family) if len(family) else sentences.untested(ROBUSTNESS, regime)
        return {"verdict": "not tested", "sentence": sentence.rstrip(".") + checked + "."}
    counts = {"n_trials": int((tested["n_a"] + tested["n_b"]).sum()), "n_tested": len(tested)}
    if regime == "canonical":
        return {**counts, **_check(tested, beside, tolerance, declared, checked)}
    margin = margin_of(ROBUSTNESS.name, effect)
    differ = tested[tested["verdict"].isin(("lower", "higher")) & tested["estimate"].abs().gt(margin)]
    check = _check_state(every_regime, tolerance)
    if len(differ) and check != "failed":
        verdict, head = "supported", differ.loc[differ["estimate"].abs().idxmax()]
    elif tested["verdict"].eq("equivalent").all():
        verdict, head = "not supported", tested.loc[tested["estimate"].abs().idxmax()]
    elif tested["verdict"].eq("not testable").all():
        verdict, head = "not testable", tested.loc[tested["estimate"].abs().idxmax()]
    else:
        verdict, head = "inconclusive", (differ if len(differ) else tested).pipe(
            lambda part: part.loc[part["estimate"].abs().idxmax()])
    head = head.to_dict()
    d = head["detail"]
    control = {"held": "canonical check held", "failed": "canonical check failed",
               None: "no canonical check"}[check]
    sentence = _native_words(regime, verdict, head, tested, beside=beside, margin=margin, check=check)
    return {**counts, "verdict": verdict, "estimate": head["estimate"], "low": none_if_missing(head["low"]),
            "high": none_if_missing(head["high"]), "p": none_if_missing(head["p"]),
            "p_holm": none_if_missing(head["p_holm"]), "p_tost": none_if_missing(head.get("p_tost")),
            "unit": f"robust AUC, {_models(d)}: {d['framework_a']} vs {d['framework_b']}",
            "n_a": int(head["n_a"]), "n_b": int(head["n_b"]), "n_differ": len(differ),
            "budgets": _state(d), "control": control,
            "seeds_needed": head["seeds_needed"] if verdict in ("inconclusive", "not testable") else None,
            "sentence": sentence + checked + "."}


def _models(d: dict) -> str:
    return {"own": "own defaults", "config": f"the same configuration ({d.get('default')})",
            "all": "all models"}.get(d["set_kind"], d["set_kind"])


def _state(d: dict) -> str:
    """"matched, transfer examples of the surrogate (mlp128 trained on jax ...)" for the headline."""
    state = "matched" if d["role"] == "matched" else "as trained"
    if d["kind"] != "transfer":
        return f"{state}, white-box {d['attack'].upper()}"
    surrogate = str(d.get("surrogate") or "the other frameworks' models")
    return f"{state}, {d['attack'].upper()} of {surrogate.split(' (')[0]}"


def _check_state(every_regime: pd.DataFrame, tolerance: float):
    """"held", "failed" or None (no canonical check) of the canonical regime's same-configuration pairs."""
    check = every_regime[every_regime[REGIME].eq("canonical") & every_regime["role"].eq("comparison")
                         & every_regime["verdict"].ne("not compared")]
    if check.empty:
        return None
    return "failed" if _beyond(check, tolerance).any() else "held"


def _beyond(check: pd.DataFrame, tolerance: float) -> pd.Series:
    """The check's pairs that fail it: beyond the tolerance, and either different at Holm p < ALPHA or with too few
    seeds for the test to reach it (a check that cannot test counts the difference alone: 2 seeds a cell)."""
    return check["verdict"].isin(("lower", "higher", "not testable")) & check["estimate"].abs().gt(tolerance)


def _check(tested: pd.DataFrame, beside: pd.DataFrame, tolerance: float, declared: bool, checked: str) -> dict:
    """The canonical regime's entry: a check of the pipeline against the declared tolerance."""
    beyond = tested[_beyond(tested, tolerance)]
    identical = bool((tested["estimate"].abs() < 1e-12).all() and tested["low"].isna().all())
    verdict = "control failed" if len(beyond) else "control held"
    head = (beyond if len(beyond) else tested).pipe(lambda part: part.loc[part["estimate"].abs().idxmax()]).to_dict()
    said = ("identical on every seed: control held" if identical and verdict == "control held" else
            f"{len(beyond)} of {len(tested)} pairs differ beyond +-{tolerance:g}")
    where = "declared by the protocol before any attack" if declared else (
        "the findings' effect: this study's protocol declared none")
    state = ("held: no pair differs beyond it, as identical frameworks must" if verdict == "control held" else
             "failed: pairs differ beyond it where the frameworks are identical by construction, so the pipeline "
             "(attacks, matching, seeds) is not to be trusted for a native verdict")
    sentence = (f"Canonical: the check (the same configuration and formulas on every framework, so the frameworks "
                f"are identical by construction; never a finding about frameworks), against a tolerance of "
                f"+-{tolerance:g} of robust AUC {where}, {state}: {len(beyond)} of {len(tested)} pairs differ "
                f"beyond it after Holm (or, with too few seeds to test, by their difference alone); the largest, "
                f"{_robustness_pair(head)}" + _beside(beside, head))
    if identical:
        return {"verdict": verdict, "unit": "robust AUC", "n_a": int(head["n_a"]), "n_b": int(head["n_b"]),
                "control": said, "sentence": sentence + checked + "."}
    return {"verdict": verdict, "estimate": head["estimate"], "low": none_if_missing(head["low"]),
            "high": none_if_missing(head["high"]), "unit": "robust AUC", "p": none_if_missing(head["p"]),
            "p_holm": none_if_missing(head["p_holm"]), "n_a": int(head["n_a"]), "n_b": int(head["n_b"]),
            "n_differ": len(beyond), "control": said, "sentence": sentence + checked + "."}


def _native_words(regime: str, verdict: str, head: dict, tested, *, beside, margin: float, check) -> str:
    """The claim in a regime of frameworks as shipped: the deciding pair, the family's tally, the decomposition."""
    lead = {"supported": f"{Robustness.statement} here",
            "not supported": f"frameworks are as robust within +-{margin:g} of robust AUC here",
            "not testable": f"{Robustness.question} is not testable here with these seeds",
            "inconclusive": f"not settled {Robustness.question}"}[verdict]
    text = f"{regime.capitalize()}: {lead}: {_robustness_pair(head)} ({_tally(tested)})"
    if verdict == "not testable":
        text += (f"; {sentences.not_testable(head)}: the exact test over {int(head['n_a'])} paired seeds cannot "
                 f"reach p < {ALPHA:g} after Holm over the family of {len(tested)} (run more seeds, or register "
                 "fewer pairs before the attack)")
    if check == "failed":
        text += "; the canonical check failed (pairs differ where frameworks are identical), so none is supported"
    elif check is None:
        text += f"; no canonical check (to run it: {CONTROL_COMMAND})"
    return text + _beside(beside, head)


def _tally(tested) -> str:
    counts = tested["verdict"].value_counts()
    return (f"{len(tested)} pair{'s' if len(tested) != 1 else ''} in the claim's family: "
            + ", ".join(f"{k} {name}" for name, k in counts.items()))


def source_text(tested: pd.DataFrame) -> str:
    """"; the transferred examples of each seed made on its surrogate (...), the same for every target", or
    "" where no tested comparison is a transfer attack."""
    found = sorted({d.get("surrogate") or "another framework's model of the seed (no surrogate recorded)"
                    for d in tested.get("detail", pd.Series([], dtype=object)) if d and d.get("kind") == "transfer"})
    if not found:
        return ""
    return f"; transferred examples made on the surrogate, {'; '.join(found)}, the same for every target of a seed"


def _robustness_pair(head: dict) -> str:
    """The headline pair: frameworks, dataset, configuration, state, clean accuracies, attack, grid and areas."""
    d = head["detail"]
    state = (f"at matched clean accuracy (each model's checkpoint nearest the target validation accuracy "
             f"{d['target']:.3f})" if d["role"] == "matched" else "as trained (no checkpoints kept: not matched)")
    source = ("the seed's surrogate (the same examples for both)" if d.get("surrogate")
              else "the other frameworks' models of the same seed")
    attack = (f"{d['attack'].upper()} examples made on {source}"
              if d["kind"] == "transfer" else f"white-box {d['attack'].upper()} (no transferred examples)")
    grid = ", ".join(f"{e:g}" for e in (d.get("eps") or [])[1:])
    models = {"own": "each framework's own default", "config": f"the same configuration ({d.get('default')})",
              "all": "all models"}.get(d["set_kind"], d["set_kind"])
    return (f"{d['framework_a']} against {d['framework_b']} on {d['dataset']}, {models} {state}, clean test "
            f"accuracy {d['clean_a']:.3f} against {d['clean_b']:.3f}; {attack}, at eps {grid} (the pre-registered "
            f"grid); area under the robust-accuracy curve on the {d['shared']:.0f} test samples both classify "
            f"correctly: {d['auc_a']:.3f} against {d['auc_b']:.3f}, difference {numbers(head)}")


def _beside(beside, head: dict) -> str:
    """"; beside it: the same configuration on both frameworks (its decomposition) ...; as trained ...; white-box
    ...; own defaults not registered ..." (tests unadjusted), in the claim's state and kind."""
    if beside is None or beside.empty:
        return ""
    d = head["detail"]
    details = beside["detail"]
    own = details.map(lambda x: x["set_kind"] == "own")
    same = details.map(lambda x: x["role"] == d["role"] and x["kind"] == d["kind"])
    groups = [("the same configuration on both frameworks (its decomposition: the frameworks' native choices "
               "alone)", ~own & same),
              ("as trained", own & details.map(lambda x: x["role"] == "published" and x["kind"] == d["kind"])),
              ("white-box", own & details.map(lambda x: x["role"] == d["role"] and x["kind"] == "white-box")),
              ("own defaults outside the registered family", own & same)]
    parts = []
    for name, chosen in groups:
        rows = beside[chosen.astype(bool)]
        if rows.empty or (name == "white-box" and d["kind"] == "white-box") or (
                name == "as trained" and d["role"] == "published"):
            continue
        top = rows.loc[rows["estimate"].abs().idxmax()]
        below = int((_numeric(rows["p"]) < 0.05).sum())
        parts.append(f"{name}, {below} of {len(rows)} pair{'s' if len(rows) != 1 else ''} with p < 0.05 "
                     f"unadjusted, the largest {top['label']} {signed(top['estimate'])}")
    return "; beside it: " + "; ".join(parts) if parts else ""


def _numeric(values):
    return pd.to_numeric(values, errors="coerce")


def checks_words(frame) -> str:
    """"; the checks held on all 30 attacked models (...)", or what failed, of `robustness_checks` rows."""
    if frame is None or len(frame) == 0:
        return ""
    failed = frame[frame["failed"].map(bool)]
    zero = _numeric(frame["zero_gradient"]).max()
    floor = _numeric(frame["accuracy_at_check"]).max()
    held = (f"zero input gradient on at most {zero:.1%} of samples; PGD no weaker than FGSM; accuracy at eps "
            f"{frame['check_eps'].max():g} at most {floor:.3f}")
    if failed.empty:
        return f"; the attack checks held on all {len(frame)} attacked models ({held})"
    first = failed.iloc[0]
    where = f"trial {first['trial']}" + (f" after epoch {first['epoch']}" if first["epoch"] == first["epoch"]
                                         and first["epoch"] is not None else "")
    return (f"; attack checks failed on {len(failed)} of {len(frame)} attacked models (e.g. {first['framework']} "
            f"{where}: {first['failed'][0]}), so their robustness may be overstated")


ROBUSTNESS = Robustness()


def _not_compared(regime: str, rows) -> str:
    if not len(rows):
        return sentences.untested(ROBUSTNESS, regime)
    example = f" (e.g. {rows.iloc[0]['label']}: {rows.iloc[0]['detail']['note']})"
    return (f"{regime.capitalize()}: {Robustness.question} is not tested: every pair of frameworks differs in clean "
            f"accuracy by more than the margin{example}.")


ROBUSTNESS = Robustness()
