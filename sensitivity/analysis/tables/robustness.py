"""Robustness to adversarial examples (Liu et al. 2018): accuracy against eps, white-box and transferred,
also relative to each model's clean accuracy; the checks an attack must pass; and (`robustness_pairs`) the
frameworks compared at matched clean accuracy.

`sensitivity robustness` stores its protocol (`robustness_pairs.PROTOCOL_ATTR`: the eps grid, the margin, the sets
of models it compared with their targets and matched checkpoints) and one record per attacked trial
(`robustness:NUMBER`: {"published": state, "checkpoints": {epoch: state}}, a state being one attacked model: its
clean accuracy, its white-box accuracies and per-sample correctness per attack and eps, what it kept on other
models' examples, the share of samples with a zero input gradient); the trial table carries them in `attrs`.
`robustness_curves` gives, for the states the verdict compares (`drawn`: each configuration's models at matched
clean accuracy where its set has matched checkpoints, else as trained; never several defaults pooled), one row per
dataset, default, attack, epsilon and (source, target framework): the mean accuracy over the target models with its
95% interval (`intervals`: none below 3 models, the range at 2) and n, the models behind it; the same relative to
each model's clean accuracy. `kind` is `white-box` where each model was attacked through its own gradient,
`transfer` where it was tested on the examples its seed's surrogate made (`surrogate (FRAMEWORK)`).
`robustness_checks` flags, per attacked state, gradient masking (a share of all-zero input gradients above the
protocol's threshold), PGD weaker than FGSM, and an accuracy that does not fall towards 0 at the checks' radius
(`checks.eps`, attacked once beyond the grid; a study attacked before it was recorded: the grid's largest). Every
row carries the target model's regime (`semantics`); a mean is over models of one regime, and examples made on a
model of one regime and tested on a model of the other are left out of the curves.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sensitivity.analysis.intervals import CONFIDENCE, group_intervals
from sensitivity.analysis.tables.robustness_pairs import SURROGATE, protocol_of, state_of_role, states_of
from sensitivity.analysis.table import REGIME, NotEnoughData, derived, regime_sorted, trained, trials_table

PREFIX = "robustness:"
CLEAN_MARGIN = 0.02  # the margin of a study attacked before the protocol was recorded
CHECKS = {"pgd_slack": 0.02, "floor": 0.1, "zero_gradient": 0.01}  # likewise, its checks' thresholds
NEEDS = ("robustness needs trained weights attacked by sensitivity robustness (transfer or sweep with "
         "--keep-checkpoints first)")


def robustness_rows(table) -> pd.DataFrame:
    """One row per state the verdict compares (`drawn`), attack, epsilon and source (the target itself for
    white-box, the seed's surrogate for transfer); computed once per table (`table.derived`)."""
    return derived(trials_table(table), _robustness_rows)


def _robustness_rows(table: pd.DataFrame) -> pd.DataFrame:
    records = table.attrs.get("robustness") or {}
    if not records:
        raise NotEnoughData(NEEDS)
    models = trained(table)
    info = {number: (framework, regime, dataset) for number, framework, regime, dataset in
            zip(models["number"], models["framework"], models[REGIME], models["dataset"])}
    states = {int(n): states_of(r) for n, r in records.items()}
    rows = []
    for number, state, default, role in drawn(protocol_of(table), states):
        if number not in info:
            continue
        framework, regime, dataset = info[number]
        base = {"dataset": dataset, REGIME: regime, "default": default, "role": role, "target_trial": number,
                "target_framework": framework, "samples": state["samples"], "clean_accuracy": state["clean"]}
        sources = [(number, framework, regime, "white-box", state["white_box"])]
        for key, accs in (state.get("transfer") or {}).items():
            if key == SURROGATE:  # the one source of the seed, in every regime: no compared framework's model
                sources.append((None, f"surrogate ({(state.get('surrogate') or {}).get('framework', '?')})",
                                regime, "transfer", accs))
            elif int(key.split("@")[0]) in info:  # a study attacked before the surrogate: another framework's
                other = info[int(key.split("@")[0])]
                sources.append((int(key.split("@")[0]), other[0], other[1], "transfer", accs))
        for source, source_framework, source_regime, kind, by_attack in sources:
            for attack, accuracies in by_attack.items():
                for eps, accuracy in zip(state["eps"], accuracies):
                    rows.append({**base, "source_trial": source, "source_framework": source_framework,
                                 "source_semantics": source_regime, "kind": kind, "attack": attack,
                                 "eps": eps, "accuracy": accuracy,
                                 "relative_accuracy": accuracy / state["clean"] if state["clean"] else np.nan})
    if not rows:
        raise NotEnoughData(NEEDS)
    return pd.DataFrame(rows)


def drawn(protocol: dict, states: dict) -> list:
    """[(trial, state, default, role)]: the states the verdict compares, one per model of each set of one
    configuration (`robustness_pairs.primary`: its matched checkpoint where the set has them, else the model as
    trained); for a study attacked before the protocol recorded its sets, each model as trained."""
    sets = [s for s in protocol.get("sets") or [] if s.get("kind") in ("config", "all")]
    if not sets:
        return [(n, s["published"], None, "as trained") for n, s in sorted(states.items())]
    out = []
    for one in sets:
        role = "matched" if one.get("matched") else "published"
        for number in one["members"]:
            state = state_of_role(states[number], role, one, number) if number in states else None
            if state is not None:
                out.append((number, state, one.get("default") or one["key"],
                            "matched" if role == "matched" else "as trained"))
    return out


def robustness_checks(table) -> pd.DataFrame:
    """One row per attacked state (each model as trained, each matched checkpoint): the share of samples with an
    all-zero input gradient, how far PGD's accuracy rises above FGSM's at worst, the strongest attack's accuracy at
    the checks' radius (`check_eps`), and which checks fail (`failed`: a list of sentences), against the
    protocol's thresholds."""
    limits = {**CHECKS, **(protocol_of(table).get("checks") or {})}
    info = trained(table).set_index("number")[["framework", REGIME, "dataset"]].to_dict("index")
    rows = []
    for number, record in (table.attrs.get("robustness") or {}).items():
        if int(number) not in info:
            continue
        states = states_of(record)
        for epoch, state in [(None, states["published"]), *states.get("checkpoints", {}).items()]:
            boxes = state.get("white_box") or {}
            zero = state.get("zero_gradient")
            weaker = (float(np.max(np.subtract(boxes["pgd"], boxes["fgsm"]))) if {"pgd", "fgsm"} <= set(boxes)
                      else None)
            strongest = boxes.get("pgd") or boxes.get("fgsm")
            check = state.get("check") or {}
            floor, check_eps = ((check["accuracy"], check["eps"]) if check else
                                (float(strongest[-1]) if strongest else None, state["eps"][-1]))
            failed = []
            if zero is not None and zero > limits["zero_gradient"]:
                failed.append(f"{zero:.1%} of its samples have an all-zero input gradient (gradient masking?)")
            if weaker is not None and weaker > limits["pgd_slack"]:
                failed.append(f"PGD is weaker than FGSM (its accuracy {weaker:.3f} higher at one eps)")
            if floor is not None and floor > limits["floor"]:
                failed.append(f"accuracy {floor:.3f} at eps {check_eps:g}, above {limits['floor']:g} (the attack "
                              "may be failing)")
            rows.append({"trial": int(number), "epoch": None if epoch is None else int(epoch),
                         **info[int(number)], "zero_gradient": zero, "pgd_above_fgsm": weaker,
                         "accuracy_at_check": floor, "check_eps": check_eps, "failed": failed})
    return pd.DataFrame(rows, columns=["trial", "epoch", "framework", REGIME, "dataset", "zero_gradient",
                                       "pgd_above_fgsm", "accuracy_at_check", "check_eps", "failed"])


def robustness_curves(table, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Mean accuracy over target models per regime, dataset, attack, eps, kind and framework pair, with its
    interval (`intervals.group_intervals`), n (models), the models' mean clean accuracy, and the accuracy
    relative to each model's clean accuracy (`relative_mean`, `_low`, `_high`); pairs of models of different
    regimes are left out."""
    rows = robustness_rows(table)
    rows = rows[rows[REGIME].eq(rows["source_semantics"])]
    keys = [REGIME, "dataset", "default", "role", "attack", "kind", "source_framework", "target_framework", "eps"]
    per_target = _per_target(rows, keys)
    out = group_intervals(per_target, keys, "accuracy", confidence=confidence).rename(columns={"accuracy_n": "n"})
    relative = group_intervals(per_target, keys, "relative_accuracy", "relative", "relative", confidence)
    clean = per_target.groupby(keys, dropna=False, sort=False)["clean_accuracy"].mean().rename("clean_mean")
    out = out.merge(relative.drop(columns="relative_n"), on=keys).join(clean, on=keys)
    out["samples"] = int(rows["samples"].min())
    return regime_sorted(out, keys)


def _per_target(rows: pd.DataFrame, keys: list) -> pd.DataFrame:
    """A target tested on several source models of one framework counts once: its mean over them."""
    return (rows.groupby(keys + ["target_trial"], dropna=False)[["accuracy", "relative_accuracy", "clean_accuracy"]]
            .mean().reset_index())
