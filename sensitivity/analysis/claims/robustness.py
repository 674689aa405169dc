"""Claim "frameworks differ in robustness" (Liu et al. 2018), judged against its control.

Its comparisons (`tables.robustness_pairs`, of the first study with robustness records) are the same configuration
on every framework, so that the two models differ in framework alone; each framework's own default, the same pairs
white-box and as trained are reported beside them.

- canonical: the frameworks are identical by construction (the same formulas and initial weights), so the regime
  is a check of the pipeline: "control held" where none of its pairs differs after Holm, "control failed" where
  one does (then no native verdict about frameworks can be trusted). It never says frameworks differ.
- native (any other regime): each pair's native difference less the canonical one on the same pair (same
  dataset, configuration, role, attack and frameworks), with its interval (the two standard errors added, Student
  t on the fewer of the two's seed degrees of freedom), Holm-corrected over the pairs. "supported" where a pair's
  excess over the control differs from 0 in the direction of its native difference, the native difference itself
  differs, and the control held; "not supported" where no pair differs and every tested excess is equivalent to
  0 within the margin (TOST); else "inconclusive". Without a canonical twin a pair has no excess, and a claim
  with none is "inconclusive", naming the command that runs the control.

The attack checks (`tables.robustness.robustness_checks`: zero gradients, PGD no weaker than FGSM, accuracy at the
check's radius) are said with the verdict.
"""
from __future__ import annotations

import math

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.base import Comparison, none_if_missing
from sensitivity.analysis.claims.sentences import numbers, signed
from sensitivity.analysis.statistics import ALPHA, REGIME, holm, margin_of, t_half_width, tost
from sensitivity.analysis.tables.robustness import robustness_checks
from sensitivity.analysis.tables.robustness_pairs import robustness_comparisons

TWIN = ("dataset", "default", "role", "kind", "attack", "framework_a", "framework_b")
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

    def context(self, sources: list) -> pd.DataFrame:
        """The attack checks of the first study with robustness records."""
        for source in sources:
            if source.attrs.get("robustness"):
                return robustness_checks(source)
        return pd.DataFrame(columns=[REGIME])

    def verdict(self, regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                context: pd.DataFrame) -> dict:
        return robustness_claim(regime, rows, every_regime, effect,
                                checks_words(context[context[REGIME].eq(regime)] if len(context) else context))

    def comparison_words(self, row: dict) -> tuple:
        return "", ""


def robustness_claim(regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                     checked: str) -> dict:
    """The claim's entry in `regime` (see the module); `rows`: its comparisons in the regime, `every_regime`:
    in every regime; `checked`: the attack checks' sentence."""
    own = rows[rows["role"].eq("comparison")]
    tested = own[own["verdict"].ne("not compared")]
    checked = source_text(tested) + checked
    beside = rows[rows["role"].eq("beside") & rows["verdict"].ne("not compared")]
    if tested.empty:
        sentence = _not_compared(regime, own) if len(own) else sentences.untested(ROBUSTNESS, regime)
        return {"verdict": "not tested", "sentence": sentence.rstrip(".") + checked + "."}
    counts = {"n_trials": int((tested["n_a"] + tested["n_b"]).sum()), "n_tested": len(tested)}
    differ = tested[tested["verdict"].isin(("lower", "higher"))]
    head = (differ if len(differ) else tested)
    head = head.loc[head["estimate"].abs().idxmax()].to_dict()
    if regime == "canonical":
        return {**counts, **_control(tested, differ, head, beside, checked)}
    control = every_regime[every_regime["role"].eq("comparison") & every_regime[REGIME].eq("canonical")
                           & every_regime["verdict"].ne("not compared")]
    excess = _excess(tested, control)
    held = control.empty or not control["verdict"].isin(("lower", "higher")).any()
    base = {**counts, "n_differ": len(differ), "unit": "native minus canonical robust AUC"}
    if excess.empty:
        sentence = native_words(regime, "inconclusive", head, tested, excess=None, beside=beside, effect=effect,
                                why=f"no canonical control on the same pairs (to run it: {CONTROL_COMMAND})")
        return {**base, "verdict": "inconclusive", "estimate": head["estimate"], "low": head["low"],
                "high": head["high"], "unit": head["unit"], "p": head["p"], "n_a": int(head["n_a"]),
                "n_b": int(head["n_b"]), "control": "no canonical control", "sentence": sentence + checked + "."}
    excess["p_holm"] = holm([none_if_missing(p) for p in excess["p"]])
    excess["p_tost"] = [tost(e, se, effect, df) for e, se, df in zip(excess["estimate"], excess["se"], excess["df"])]
    beyond = excess[[p is not None and p < ALPHA and n in ("lower", "higher") and (e < 0) == (ne < 0)
                     for p, n, e, ne in zip(excess["p_holm"], excess["native_verdict"], excess["estimate"],
                                            excess["native_estimate"])]]
    if len(beyond) and held:
        verdict, top = "supported", beyond.loc[beyond["estimate"].abs().idxmax()]
    elif differ.empty and all(p is not None and p < ALPHA for p in excess["p_tost"]):
        verdict, top = "not supported", excess.loc[excess["estimate"].abs().idxmax()]
    else:
        verdict, top = "inconclusive", excess.loc[excess["estimate"].abs().idxmax()]
    top = top.to_dict()
    why = "" if held else "the canonical control failed (pairs differ where frameworks are identical)"
    sentence = native_words(regime, verdict, head, tested, excess=top, beside=beside, effect=effect, why=why)
    control_text = f"canonical {int(top['control_differ'])} of {int(top['control_tested'])} pairs differ"
    return {**base, "verdict": verdict, "estimate": top["estimate"], "low": top["low"], "high": top["high"],
            "p": top["p"], "p_holm": top["p_holm"], "p_tost": top["p_tost"], "n_a": int(top["n_a"]),
            "n_b": int(top["n_b"]), "n_differ": len(beyond), "control": control_text,
            "seeds_needed": None, "sentence": sentence + checked + "."}


def source_text(tested: pd.DataFrame) -> str:
    """"; the transferred examples of each seed made on its surrogate (...), the same for every target", or
    "" where no tested comparison is a transfer attack."""
    found = sorted({d.get("surrogate") or "another framework's model of the seed (no surrogate recorded)"
                    for d in tested.get("detail", pd.Series([], dtype=object)) if d and d.get("kind") == "transfer"})
    if not found:
        return ""
    return f"; transferred examples made on the surrogate, {'; '.join(found)}, the same for every target of a seed"


def _control(tested: pd.DataFrame, differ: pd.DataFrame, head: dict, beside: pd.DataFrame, checked: str) -> dict:
    verdict = "control failed" if len(differ) else "control held"
    return {"verdict": verdict, "estimate": head["estimate"], "low": head["low"], "high": head["high"],
            "unit": head["unit"], "p": head["p"], "p_holm": none_if_missing(head["p_holm"]), "n_a": int(head["n_a"]),
            "n_b": int(head["n_b"]), "n_differ": len(differ),
            "control": f"identical models, {len(differ)} of {len(tested)} differ",
            "sentence": control_words(verdict, head, tested, differ, beside) + checked + "."}


def _excess(native: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """Per native pair with a canonical twin: native minus canonical, with interval and p (see the module)."""
    # lazy: scipy
    from scipy import special

    twins = {tuple(d[k] for k in TWIN): (row, d) for row, d in
             zip(control.to_dict("records"), control["detail"]) if d}
    differ = int(control["verdict"].isin(("lower", "higher")).sum())
    out = []
    for row in native.to_dict("records"):
        found = twins.get(tuple(row["detail"][k] for k in TWIN))
        if found is None:
            continue
        twin, mine, theirs = found[0], row["detail"], found[1]
        se_n, se_c = none_if_missing(mine.get("se")), none_if_missing(theirs.get("se"))
        df_n, df_c = none_if_missing(mine.get("df")), none_if_missing(theirs.get("df"))
        estimate = row["estimate"] - twin["estimate"]
        item = {"label": row["label"], "estimate": estimate, "native_estimate": row["estimate"],
                "native_verdict": row["verdict"], "control_estimate": twin["estimate"], "low": None, "high": None,
                "p": None, "se": None, "df": None, "n_a": row["n_a"], "n_b": twin["n_a"],
                "control_differ": differ, "control_tested": len(control)}
        if None not in (se_n, se_c, df_n, df_c) and se_n + se_c > 0:
            se, df = math.hypot(se_n, se_c), min(df_n, df_c)
            half = t_half_width(df, se)
            item.update(low=estimate - half, high=estimate + half, se=se, df=df,
                        p=float(2 * special.stdtr(df, -abs(estimate) / se)))
        out.append(item)
    return pd.DataFrame(out)


def _not_compared(regime: str, rows) -> str:
    if not len(rows):
        return sentences.untested(ROBUSTNESS, regime)
    example = f" (e.g. {rows.iloc[0]['label']}: {rows.iloc[0]['detail']['note']})"
    return (f"{regime.capitalize()}: {Robustness.question} is not tested: every pair of frameworks differs in clean "
            f"accuracy by more than the margin{example}.")


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


def _tally(tested) -> str:
    counts = tested["verdict"].value_counts()
    return (f"{len(tested)} same-configuration comparison{'s' if len(tested) != 1 else ''}: "
            + ", ".join(f"{k} {name}" for name, k in counts.items()))


def native_words(regime: str, verdict: str, head: dict, tested, *, excess, beside, effect: float,
                 why: str = "") -> str:
    """The robustness claim in a regime of frameworks as shipped: the largest native difference of the same
    configuration on two frameworks, and its excess over the canonical control on the same pair."""
    lead = {"supported": f"{Robustness.statement} here, beyond the canonical control",
            "not supported": f"frameworks are as robust within +-{effect:g} of robust AUC, beyond the control",
            "inconclusive": f"not settled {Robustness.question}"}[verdict]
    text = f"{regime.capitalize()}: {lead}: {_robustness_pair(head)} ({_tally(tested)})"
    if excess is not None:
        low = none_if_missing(excess.get("low"))
        spread = f" [{signed(low)}, {signed(excess['high'])}]" if low is not None else " (no interval)"
        p = none_if_missing(excess.get("p_holm"))
        text += (f"; native minus the canonical control on the same pair ({excess['label']}): "
                 f"{signed(excess['estimate'])}{spread}" + (f", Holm p={p:.2g}" if p is not None else "")
                 + f" (native {signed(excess['native_estimate'])}, canonical {signed(excess['control_estimate'])})")
    if why:
        text += f"; {why}"
    return text + _beside(beside, head)


def control_words(verdict: str, head: dict, tested, differ, beside) -> str:
    """The canonical regime's robustness: a check of the pipeline, since its frameworks are identical."""
    state = ("held: identical models, as they must be" if verdict == "control held" else
             "failed: pairs differ where frameworks are identical by construction, so the pipeline (attacks, "
             "matching, seeds) is not to be trusted for a native verdict")
    return (f"Canonical: the control (the same formulas and initial weights on every framework, so the frameworks "
            f"are identical by construction; a check of the pipeline, never a finding about frameworks) {state}: "
            f"{len(differ)} of {len(tested)} same-configuration pairs differ after Holm; the largest, "
            f"{_robustness_pair(head)}" + _beside(beside, head))


def _beside(beside, head: dict) -> str:
    """"; beside it: as trained, ...; white-box, ...; each framework's own default, ..." (tests unadjusted), in
    the claim's sets and kinds."""
    if beside is None or beside.empty:
        return ""
    d = head["detail"]
    details = beside["detail"]
    config = details.map(lambda x: x["set_kind"] != "own")
    groups = [("as trained", config & details.map(lambda x: x["role"] == "published" and x["kind"] == d["kind"])),
              ("white-box", config & details.map(lambda x: x["role"] == d["role"] and x["kind"] == "white-box")),
              ("each framework's own default (the defaults' effect: configuration and framework together)",
               ~config & details.map(lambda x: x["kind"] == d["kind"] and x["role"] == d["role"]))]
    parts = []
    for name, chosen in groups:
        rows = beside[chosen.astype(bool)]
        if rows.empty or (name == "white-box" and d["kind"] == "white-box"):
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
