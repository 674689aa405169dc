"""The robustness claim ("frameworks differ in robustness"), judged against its control.

Its comparisons (`robustness_pairs.primary`) are the same configuration on every framework, so that the two
models differ in framework alone; each framework's own default is reported beside them as the defaults' effect.

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
"""
from __future__ import annotations

import math

import pandas as pd

from sensitivity.analysis.claims import sentences
from sensitivity.analysis.claims.comparisons import none_if_missing
from sensitivity.analysis.statistics import holm, tost

ALPHA = 0.05
CLAIM = "robustness"
TWIN = ("dataset", "default", "role", "kind", "attack", "framework_a", "framework_b")
CONTROL_COMMAND = "sensitivity robustness STUDY --semantics both (its models trained in both regimes)"


def robustness_claim(regime: str, rows: pd.DataFrame, every_regime: pd.DataFrame, effect: float,
                     checked: str) -> dict:
    """The claim's entry in `regime` (see the module); `rows`: its comparisons in the regime, `every_regime`:
    in every regime; `checked`: the attack checks' sentence."""
    own = rows[rows["role"].eq("comparison")]
    tested = own[own["verdict"].ne("not compared")]
    checked = source_text(tested) + checked
    beside = rows[rows["role"].eq("beside") & rows["verdict"].ne("not compared")]
    if tested.empty:
        sentence = sentences.not_compared(regime, CLAIM, own) if len(own) else sentences.untested(regime, CLAIM)
        return {"verdict": "not tested", "sentence": sentence.rstrip(".") + checked + "."}
    counts = {"n_trials": int((tested["n_a"] + tested["n_b"]).sum()), "n_tested": len(tested)}
    differ = tested[tested["verdict"].isin(("lower", "higher"))]
    head = (differ if len(differ) else tested)
    head = head.loc[head["estimate"].abs().idxmax()].to_dict()
    if regime == "canonical":
        return {**counts, **_control(tested, differ, head, beside, checked)}
    control = every_regime[every_regime["role"].eq("comparison") & every_regime["semantics"].eq("canonical")
                           & every_regime["verdict"].ne("not compared")]
    excess = _excess(tested, control)
    held = control.empty or not control["verdict"].isin(("lower", "higher")).any()
    base = {**counts, "n_differ": len(differ), "unit": "native minus canonical robust AUC"}
    if excess.empty:
        sentence = sentences.robustness_native(regime, "inconclusive", head, tested, None, beside, effect,
                                               f"no canonical control on the same pairs (to run it: "
                                               f"{CONTROL_COMMAND})")
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
    sentence = sentences.robustness_native(regime, verdict, head, tested, top, beside, effect, why)
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
            "sentence": sentences.robustness_control(verdict, head, tested, differ, beside) + checked + "."}


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
            half = float(special.stdtrit(df, 0.975)) * se
            item.update(low=estimate - half, high=estimate + half, se=se, df=df,
                        p=float(2 * special.stdtr(df, -abs(estimate) / se)))
        out.append(item)
    return pd.DataFrame(out)
