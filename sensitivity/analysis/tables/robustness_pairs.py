"""Frameworks compared under attack, as `sensitivity robustness` recorded them (its protocol: the sets, their
targets and matched checkpoints; each state's per-sample correctness).

For a set and two of its frameworks A and B, in one role (the matched checkpoints, or the models as trained) and
one kind of attack:
- `transfer` (the primary test): A's and B's states of one seed meet the same examples, made on that seed's
  surrogate (the protocol's `surrogate`: a model no compared framework trained), so that no compared model's
  gradient is in the comparison and every pair meets the same source;
- `white-box`: each state under its own attack.
On the samples both states classify correctly when clean, each sample's robust accuracy curve over the protocol's
eps grid (1 at eps 0) has an area (trapezoids, divided by the largest eps: 1 for a sample never flipped, 0 for one
flipped at the first eps); the comparison is the mean over seeds of A's mean area minus B's (`auc_difference`),
with a paired bootstrap over seeds and samples: each resample draws the seeds again (their means carry the runs'
noise) and, once for all of them since every seed met the same test set, the samples' own effects (each sample's
mean difference over the seeds, shrunk by the method of moments to what the seeds' noise does not already
account for: resampling both factors of this crossed design as they are counts that noise twice, Owen 2007).
The two resamples' variances (the seeds' scaled by n / (n - 1), which a bootstrap of n seeds leaves out) make
the standard error; the 95% interval and the two-sided p are Student t's on the seeds' n - 1 degrees of freedom
(the seed is the unit: the samples widen the interval and add no degree of freedom), since a percentile interval
of 3 to 6 seeds is too narrow. Where the seeds' means have no spread, the test is the exact sign-flip test over
the seeds (its p cannot go below 2 / 2^n: 0.0625 at 5 seeds) and there is no interval, as under MIN_FOR_INTERVAL
seeds. Pairs whose clean test accuracies differ by more than the protocol's margin are not compared.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from sensitivity.analysis.statistics import MIN_FOR_INTERVAL, sign_flip, t_half_width
from sensitivity.core.correctness import unpack

SURROGATE = "surrogate"  # the transfer source's key in a state (sensitivity.experiments.robustness.SURROGATE)
PROTOCOL_ATTR = "robustness_protocol"  # the study attribute of the protocol `sensitivity robustness` ran
COLUMNS = ["semantics", "dataset", "set", "set_kind", "default", "role", "kind", "attack", "framework_a",
           "framework_b", "target", "clean_a", "clean_b", "comparable", "margin", "auc_a", "auc_b", "estimate", "low",
           "high", "p", "se", "df", "sd", "n_a", "n_b", "shared", "method", "test", "p_floor", "note", "eps",
           "primary", "surrogate"]


def states_of(record: dict) -> dict:
    """{"published": state, "checkpoints": {epoch: state}} of a record (one written before checkpoints were
    recorded is the published state alone)."""
    if "published" in record:
        return record
    return {"published": record, "checkpoints": {}}


def protocol_of(table) -> dict:
    """The protocol `sensitivity robustness` recorded with the study, or {} for a study attacked before."""
    return table.attrs.get(PROTOCOL_ATTR) or {}


def auc_difference(diffs: np.ndarray, shared: np.ndarray, resamples: int = 2000, seed: int = 0) -> dict:
    """`diffs` (seeds x test samples): each sample's area under A's curve minus under B's, counted where
    `shared` (seeds x samples, 0 or 1) holds: the samples both of that seed's states classify correctly. The mean
    over seeds of their means, with the paired bootstrap over seeds and samples (see the module)."""
    counts = shared.sum(axis=1)
    means = (diffs * shared).sum(axis=1) / np.maximum(counts, 1)
    estimate = float(means.mean()) if len(means) else float("nan")
    out = {"estimate": estimate, "low": None, "high": None, "p": None, "se": None, "df": None,
           "sd": float(means.std(ddof=1)) if len(means) > 1 else None, "n": len(means), "method": "too few",
           "test": "none", "p_floor": None}
    if len(means) < MIN_FOR_INTERVAL:
        return ({**out, "p": sign_flip(means), "method": "exact", "test": "exact sign-flip",
                 "p_floor": 2 / 2 ** len(means)} if len(means) else out)
    # lazy: scipy
    from scipy import special

    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(means), (resamples, len(means)))  # the seeds, with replacement
    over_seeds = means[picks].mean(axis=1)
    over_samples = _sample_effects(diffs, shared, means, rng, resamples)
    n = len(means)
    # a bootstrap of n seeds spreads by (n - 1) / n of their variance: corrected, and judged on Student t
    seeds_var = float(over_seeds.var(ddof=1)) * n / (n - 1)
    variance = seeds_var + float(over_samples.var(ddof=1))
    if seeds_var == 0 or variance == 0:  # no spread over the seeds: no t test, the exact sign-flip one
        return {**out, "p": sign_flip(means), "df": None, "method": "exact", "test": "exact sign-flip",
                "p_floor": 2 / 2 ** n}
    df = float(n - 1)
    se = float(np.sqrt(variance))
    half = t_half_width(df, se)
    return {**out, "low": estimate - half, "high": estimate + half, "se": se, "df": df, "df_max": df,
            "p": float(2 * special.stdtr(df, -abs(estimate) / se)), "method": "paired bootstrap", "test": "paired t"}


def _sample_effects(diffs, shared, means, rng, resamples: int) -> np.ndarray:
    """Per resample, how far the mean moves when the test samples are drawn again: the samples' own effects
    (each sample's mean over the seeds that count it, less the noise those seeds' resample already carries: the
    two-way residual variance over the seeds counting it, by the method of moments) resampled with replacement."""
    covered = shared.sum(axis=0)
    used = covered > 0
    d, m, k = diffs[:, used], shared[:, used], covered[used]
    per_sample = (d * m).sum(axis=0) / k
    grand = float((d * m).sum() / m.sum())
    residual = (d - means[:, None] - per_sample[None, :] + grand) * m
    dof = m.sum() - len(means) - len(k) + 1
    noise = float((residual ** 2).sum() / dof) if dof > 0 else 0.0
    spread = per_sample.var(ddof=1) if len(k) > 1 else 0.0
    own = max(0.0, spread - noise * float(np.mean(1 / k)))  # the samples' own variance, without the runs' noise
    effects = (per_sample - per_sample.mean()) * (np.sqrt(own / spread) if spread > 0 else 0.0)
    draws = rng.integers(0, len(effects), (resamples, len(effects)))
    return effects[draws].mean(axis=1)


def areas(correct: np.ndarray, eps) -> np.ndarray:
    """Per sample, the area under its robust accuracy curve: `correct` is eps x samples (eps 0 excluded), the
    curve starts at 1 at eps 0."""
    grid = np.asarray(eps, float)
    curve = np.vstack([np.ones(correct.shape[1]), correct.astype(float)])
    return np.trapezoid(curve, grid, axis=0) / grid[-1]


def robustness_comparisons(table) -> pd.DataFrame:
    """Every pair of frameworks of every recorded set, in each role and kind, under the strongest attack
    (COLUMNS; `primary`: the claim's own comparison, see `primary`)."""
    protocol = protocol_of(table)
    if not protocol or not protocol.get("sets"):
        return pd.DataFrame(columns=COLUMNS)
    records = table.attrs.get("robustness") or {}
    states = {int(n): states_of(r) for n, r in records.items()}
    info = table.set_index("number")[["framework", "seed"]].to_dict("index")
    boot = protocol.get("bootstrap") or {}
    rows = []
    for one in protocol["sets"]:
        members = [n for n in one["members"] if n in states and n in info]
        for role in ("matched", "published"):
            if role == "matched" and not one.get("matched"):
                continue
            chosen = {n: state_of_role(states[n], role, one, n) for n in members}
            chosen = {n: s for n, s in chosen.items() if s is not None}
            by_fw: dict = {}
            for n in chosen:
                by_fw.setdefault(info[n]["framework"], {})[info[n]["seed"]] = n
            attack = "pgd" if all("pgd" in (s.get("attacks") or ()) for s in chosen.values()) else "fgsm"
            for a, b in combinations(sorted(by_fw), 2):
                for kind in ("transfer", "white-box"):
                    rows.append(_pair(one, role, kind, attack, a=a, b=b, by_fw=by_fw, chosen=chosen, info=info,
                                      protocol=protocol, boot=boot))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["primary"] = primary(frame, protocol.get("primary"))
    return frame


def primary(frame: pd.DataFrame, registered=None) -> pd.Series:
    """The claim's own comparisons (issue 41): in the native regime (any but canonical) each framework's own default
    as its users run it, the pairs the protocol registered before any attack (`registered`: [[framework, framework],
    ...]; every pair of own defaults without it), or where the regime has no own defaults, the same configuration
    on every framework (all models, in a study of no defaults); in the canonical regime, the check: the same
    configuration on every framework. At matched clean accuracy where the set has matched
    checkpoints, under the surrogate's transfer attacks where its examples were tested (else white-box)."""
    if frame.empty:
        return pd.Series([], dtype=bool)
    canonical = frame["semantics"].eq("canonical")
    has_own = set(frame.loc[frame["set_kind"].eq("own"), "semantics"])
    config = frame["set_kind"].isin(("config", "all"))
    own = frame["set_kind"].eq("own") | (config & ~frame["semantics"].isin(has_own))  # without own defaults: the rest
    if registered:
        pairs = {frozenset(p) for p in registered}
        own &= pd.Series([frozenset((a, b)) in pairs for a, b in zip(frame["framework_a"], frame["framework_b"])],
                         index=frame.index) | ~frame["set_kind"].eq("own")
    matched_sets = set(frame.loc[frame["role"].eq("matched"), "set"])
    role = np.where(frame["set"].isin(matched_sets), "matched", "published")
    third = set(frame.loc[frame["kind"].eq("transfer") & frame["method"].ne("no examples"), "set"])
    kind = np.where(frame["set"].isin(third), "transfer", "white-box")
    return np.where(canonical, config, own) & frame["role"].eq(role) & frame["kind"].eq(kind)


def state_of_role(states: dict, role: str, one: dict, number: int):
    """A member's state in `role` ("published", or "matched": its matched checkpoint, or the model as trained)."""
    if role == "published":
        return states.get("published")
    epoch = one["matched"].get(str(number))
    return states.get("published") if epoch is None else (states.get("checkpoints") or {}).get(str(epoch))


def _pair(one, role, kind, attack, *, a, b, by_fw, chosen, info, protocol, boot) -> dict:
    margin = protocol.get("clean_margin", 0.02)
    seeds = sorted(set(by_fw[a]) & set(by_fw[b]))
    states_a, states_b = [chosen[by_fw[a][s]] for s in seeds], [chosen[by_fw[b][s]] for s in seeds]
    clean_a = float(np.mean([s["clean"] for s in states_a])) if seeds else float("nan")
    clean_b = float(np.mean([s["clean"] for s in states_b])) if seeds else float("nan")
    row = {"semantics": one["regime"], "dataset": one["dataset"], "set": one["key"], "set_kind": one["kind"],
           "default": one.get("default"), "role": role, "kind": kind, "attack": attack, "framework_a": a,
           "framework_b": b, "target": one.get("target"), "clean_a": clean_a, "clean_b": clean_b, "margin": margin,
           "comparable": bool(seeds) and abs(clean_a - clean_b) <= margin, "auc_a": None, "auc_b": None,
           "estimate": np.nan, "low": None, "high": None, "p": None, "se": None, "df": None, "sd": None,
           "n_a": len(seeds),
           "n_b": len(seeds), "shared": None, "method": "not compared", "test": "none", "p_floor": None, "note": "",
           "primary": False, "surrogate": None,
           "eps": (states_a or states_b or [{}])[0].get("eps")}
    if not seeds:
        return {**row, "note": "no seed with a model of each"}
    if not row["comparable"]:
        return {**row, "note": f"clean accuracies {clean_a:.3f} and {clean_b:.3f} differ by more than {margin:g}"}
    diffs, masks, auc_a, auc_b = [], [], [], []
    for seed, sa, sb in zip(seeds, states_a, states_b):
        pairs = _curves(kind, attack, sa, sb, number_a=by_fw[a][seed], number_b=by_fw[b][seed], by_fw=by_fw,
                        seed=seed, chosen=chosen, one=one, role=role)
        if not pairs:
            continue
        both = unpack(sa["correct"]["clean"]) & unpack(sb["correct"]["clean"])
        if not both.any():
            continue  # no test sample that both models classify correctly: nothing to compare at this seed
        # over the sources of this seed (transfer): each sample's mean areas
        area_a = np.mean([areas(ca, eps) for ca, _, eps in pairs], axis=0)
        area_b = np.mean([areas(cb, eps) for _, cb, eps in pairs], axis=0)
        diffs.append(np.where(both, area_a - area_b, 0.0))
        masks.append(both)
        auc_a.append(area_a[both].mean())
        auc_b.append(area_b[both].mean())
    if not diffs:
        lacking = "the surrogate's examples and " if kind == "transfer" else ""
        return {**row, "method": "no examples",
                "note": f"no seed with {lacking}a test sample both models classify correctly"}
    found = auc_difference(np.vstack(diffs), np.vstack(masks).astype(float), boot.get("resamples", 2000),
                           boot.get("seed", 0))
    return {**row, **{k: found[k] for k in ("estimate", "low", "high", "p", "se", "df", "sd", "method", "test",
                                                 "p_floor")},
            "surrogate": _surrogate(kind, states_a) if kind == "transfer" else None,
            "n_a": found["n"], "n_b": found["n"], "auc_a": float(np.mean(auc_a)), "auc_b": float(np.mean(auc_b)),
            "shared": int(np.mean([m.sum() for m in masks]))}


def _curves(kind, attack, sa, sb, *, number_a, number_b, by_fw, seed, chosen, one, role) -> list:
    """[(A's correctness eps x samples, B's, the eps grid)]: white-box, one pair; transfer, the one pair of both
    on this seed's surrogate's examples (the same for both; a study attacked before the surrogate: one per
    source state of the set's other frameworks with this seed)."""
    eps = sa["eps"]
    if kind == "white-box":
        return [(_matrix(sa["correct"][attack]), _matrix(sb["correct"][attack]), eps)]
    got_a, got_b = (s.get("transfer_correct", {}).get(SURROGATE, {}).get(attack) for s in (sa, sb))
    if got_a and got_b:
        return [(_matrix(got_a), _matrix(got_b), eps)]
    out = []
    for framework, seeds in sorted(by_fw.items()):
        source = seeds.get(seed)
        if source in (None, number_a, number_b):
            continue
        key = _key(source, role, one)
        got_a, got_b = (s.get("transfer_correct", {}).get(key, {}).get(attack) for s in (sa, sb))
        if got_a and got_b:
            out.append((_matrix(got_a), _matrix(got_b), eps))
    return out


def _surrogate(kind: str, states: list):
    """What made the transfer examples: the surrogate's description, or None for a study attacked before it."""
    found = {(s.get("surrogate") or {}).get("describe") for s in states} - {None}
    return "; ".join(sorted(found)) or None


def _key(number: int, role: str, one: dict) -> str:
    epoch = None if role == "published" else one["matched"].get(str(number))
    return str(number) if epoch is None else f"{number}@{epoch}"


def _matrix(packed: list) -> np.ndarray:
    """eps x samples correctness, eps 0 left out (it is the clean accuracy)."""
    return np.vstack([unpack(p) for p in packed[1:]])
