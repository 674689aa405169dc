"""The transfer attack's one source per seed (the protocol's surrogate), and the robustness figure drawing the
states the verdict compares: each configuration's matched checkpoints, never several defaults pooled."""
import numpy as np
import pandas as pd
import pytest

from sensitivity.analysis.tables.robustness import robustness_curves
from sensitivity.analysis.claims.robustness import source_text
from sensitivity.analysis.tables.robustness_pairs import robustness_comparisons
from sensitivity.analysis.table import trials_table
from sensitivity.core.correctness import pack

DESCRIBE = "one mlp128 per seed trained on torch (10 epochs, adam lr 0.001)"


def model(number, framework, seed):
    return {"number": number, "state": "COMPLETE", "status": "ok", "param_framework": framework,
            "dataset": "digits", "accuracy": 0.9, "val_accuracy": 0.9, "train_time_s": 1.0, "seed": seed,
            "config_id": framework, "curve": "[]", "value_0": 0.9}


def state(clean, kept, surrogate_kept=None, legacy=None, white=None):
    """One attacked state on eps [0, 0.1]: `kept` under its own attack, `surrogate_kept` on the surrogate's
    examples, `legacy`: {source key: kept} as studies attacked before the surrogate recorded them."""
    out = {"samples": len(clean), "clean": float(clean.mean()), "eps": [0.0, 0.1], "attacks": ["pgd"],
           "white_box": {"pgd": [float(clean.mean()), float(white if white is not None else kept.mean())]},
           "correct": {"clean": pack(clean), "pgd": [pack(clean), pack(kept)]}, "transfer": {},
           "transfer_correct": {}}
    if surrogate_kept is not None:
        out["transfer"]["surrogate"] = {"pgd": [float(clean.mean()), float(surrogate_kept.mean())]}
        out["transfer_correct"]["surrogate"] = {"pgd": [pack(clean), pack(surrogate_kept)]}
        out["surrogate"] = {"model": "mlp128", "framework": "torch", "describe": DESCRIBE}
    for key, got in (legacy or {}).items():
        out["transfer"][key] = {"pgd": [float(clean.mean()), float(got.mean())]}
        out["transfer_correct"][key] = {"pgd": [pack(clean), pack(got)]}
    return out


def frame(rows, records, sets):
    table = trials_table(pd.DataFrame(rows))
    table.attrs["robustness"] = records
    table.attrs["robustness_protocol"] = {"eps": [0.1], "clean_margin": 0.05, "sets": sets}
    return table


def test_every_pair_is_compared_on_its_seeds_surrogate_not_on_a_third_framework():
    """Three frameworks, three seeds: each pair's transfer comparison is on the seed's surrogate examples, where
    torch keeps 0.8 and mxnet 0.4 of its samples; the third framework's examples (recorded too, where mxnet keeps
    more than torch) do not enter it. The pair names the surrogate that made the examples."""
    rng = np.random.default_rng(3)
    rows = [model(3 * s + i, fw, s) for s in range(3) for i, fw in enumerate(("torch", "mxnet", "jax"))]
    keep_surrogate = {"torch": 0.8, "mxnet": 0.4, "jax": 0.6}
    keep_legacy = {"torch": 0.2, "mxnet": 0.9, "jax": 0.5}
    records = {}
    for row in rows:
        clean = rng.random(600) < 0.9
        fw = row["param_framework"]
        surrogate_kept = clean & (rng.random(600) < keep_surrogate[fw])
        legacy = {str(o["number"]): clean & (rng.random(600) < keep_legacy[fw]) for o in rows
                  if o["seed"] == row["seed"] and o["param_framework"] != fw}
        records[row["number"]] = {"published": state(clean, clean & (rng.random(600) < 0.5), surrogate_kept, legacy),
                                  "checkpoints": {}}
    sets = [{"key": "config/native/digits/d", "kind": "config", "regime": "native", "dataset": "digits",
             "default": "d", "members": list(range(9)), "target": None, "matched": None}]
    pairs = robustness_comparisons(frame(rows, records, sets)).set_index(["framework_a", "framework_b", "kind"])
    pair = pairs.loc[("mxnet", "torch", "transfer")]
    assert pair["primary"] and pair["method"] == "paired bootstrap" and pair["n_a"] == 3
    # areas (1 + kept) / 2 on the surrogate's examples: (0.4 - 0.8) / 2 = -0.2 (the third framework's: +0.35)
    assert abs(pair["estimate"] + 0.2) < 0.05 and pair["high"] < 0
    assert pair["surrogate"] == DESCRIBE and pd.isna(pairs.loc[("mxnet", "torch", "white-box"), "surrogate"])
    detail = pd.DataFrame({"detail": [pair.to_dict() | {"kind": "transfer"}]})
    assert source_text(detail) == (f"; transferred examples made on the surrogate, {DESCRIBE}, the same for every "
                                   "target of a seed")
    assert source_text(pd.DataFrame({"detail": [{"kind": "white-box"}]})) == ""


def test_the_curves_draw_each_configurations_matched_checkpoints_not_the_defaults_pooled():
    """Two defaults on torch and mxnet, 3 seeds. Default a's set has matched checkpoints (white-box 0.7 there,
    0.1 as trained); default b's has none (0.3 as trained). The curves are per default: a's from its matched
    checkpoints, b's from its models as trained, each over its own 3 models, never the 6 pooled."""
    rows, records = [], {}
    clean = np.ones(200, bool)
    for number in range(12):
        framework, default, seed = ("torch", "mxnet")[number % 2], "ab"[number // 6], (number // 2) % 3
        rows.append(model(number, framework, seed))
        trained = state(clean, clean, clean, white=0.1 if default == "a" else 0.3)
        checkpoint = state(clean, clean, clean, white=0.7)
        records[number] = {"published": trained, "checkpoints": {"2": checkpoint} if default == "a" else {}}
    sets = [{"key": f"config/native/digits/{d}", "kind": "config", "regime": "native", "dataset": "digits",
             "default": d, "members": members, "target": 0.9,
             "matched": {str(n): 2 for n in members} if d == "a" else None}
            for d, members in (("a", list(range(6))), ("b", list(range(6, 12))))]
    sets.append({"key": "own/native/digits", "kind": "own", "regime": "native", "dataset": "digits",
                 "default": None, "members": [0, 7], "target": 0.9, "matched": None})
    curves = robustness_curves(frame(rows, records, sets))
    white = curves[curves["kind"].eq("white-box") & curves["eps"].eq(0.1)].set_index(["default", "target_framework"])
    assert white.loc[("a", "torch"), "accuracy_mean"] == pytest.approx(0.7)  # the matched checkpoint
    assert white.loc[("a", "torch"), "role"] == "matched" and white.loc[("a", "torch"), "n"] == 3
    assert white.loc[("b", "mxnet"), "accuracy_mean"] == pytest.approx(0.3)  # no checkpoints: as trained
    assert white.loc[("b", "mxnet"), "role"] == "as trained" and white.loc[("b", "mxnet"), "n"] == 3
    assert set(white.index.get_level_values("default")) == {"a", "b"}  # the own-default set is not drawn
    transfer = curves[curves["kind"].eq("transfer")]
    assert set(transfer["source_framework"]) == {"surrogate (torch)"}


def test_the_sections_method_names_each_datasets_grid_and_the_surrogate():
    """The robustness section says the grid each dataset was attacked on (eps_by_dataset, not the default grid)
    and that the transferred examples are the surrogate's."""
    from sensitivity.analysis.report.robustness import robustness_html

    rows, records = [], {}
    clean = np.ones(50, bool)
    for number in range(6):
        rows.append(model(number, ("torch", "mxnet")[number % 2], number // 2))
        records[number] = {"published": state(clean, clean, clean), "checkpoints": {}}
    sets = [{"key": "config/native/digits/a", "kind": "config", "regime": "native", "dataset": "digits",
             "default": "a", "members": list(range(6)), "target": 0.9, "matched": None}]
    table = frame(rows, records, sets)
    table.attrs["robustness_protocol"].update(eps=[0.05, 0.3], eps_by_dataset={"digits": [0.1]}, file="p.yaml",
                                              sha256="0" * 64)
    text = robustness_html(robustness_curves(table), table, 10)
    assert "the eps grid of each dataset (digits: [0.1]) registered in p.yaml" in text
    assert "under the examples its seed&#x27;s surrogate made (transfer)" in text
