"""The weights robustness attacks, after it has attacked them: removed unless kept, and how to train them again.

Trained weights are the largest files a study leaves (each model's `.npz`, and each epoch's with
`--keep-checkpoints`), and once every model has its robustness record nothing of the tool reads them. So a
robustness run that attacked every model removes them, with the surrogates' weights and examples, unless
`robustness --keep-checkpoints`; a run where an attack failed removes nothing (a rerun needs them). The study
records the removal (`REMOVED_ATTR`), so that a later robustness run of it is refused in one line that names the
command that trains them again into a new study (`retrain_command`): its records would otherwise be replaced by
those of no model.
"""
from __future__ import annotations

import time
from pathlib import Path

from sensitivity.studies.trial_rows import trial_records
from sensitivity.trial.loop import checkpoint_path

REMOVED_ATTR = "robustness_weights_removed"  # study attribute: {"models": n, "files": n, "time": unix seconds}


def weight_files(trial) -> list:
    """The trained weights of a trial on this disk, and its checkpoints (one per epoch of its curve but the last)."""
    weights = trial.user_attrs.get("weights")
    if not weights:
        return []
    candidates = [Path(weights)] + [Path(checkpoint_path(weights, point["epoch"]))
                                    for point in (trial.user_attrs.get("curve") or [])[:-1] if "epoch" in point]
    return [path for path in candidates if path.exists()]


def remove_attacked(study, trials: list, surrogate_dir: Path) -> int:
    """Remove the weights of `trials` (the models attacked), the surrogates' files under `surrogate_dir`, and the
    folders left empty; record the removal in the study. Returns the number of files removed."""
    removed, folders = 0, {surrogate_dir, surrogate_dir.parent}
    for trial in trials:
        for path in weight_files(trial):
            path.unlink(missing_ok=True)
            removed += 1
            folders.add(path.parent)
    if surrogate_dir.is_dir():
        for path in surrogate_dir.glob("surrogate-*.npz"):
            path.unlink(missing_ok=True)
            removed += 1
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):  # deepest first
        try:
            folder.rmdir()  # only where nothing else is left in it
        except OSError:
            pass
    study.set_user_attr(REMOVED_ATTR, {"models": len(trials), "files": removed, "time": round(time.time())})
    return removed


def removed_refusal(study) -> str:
    """The one line refusing a robustness run of a study whose attacked weights were removed; "" where they
    were not (the study never kept weights)."""
    record = study.user_attrs.get(REMOVED_ATTR)
    if not record:
        return ""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(record.get("time", 0)))
    return (f"study {study.study_name}: the weights of its {record.get('models', '?')} models were removed after its "
            f"robustness run of {when} (robustness --keep-checkpoints keeps them); to attack them again, train them "
            f"into a new study: {retrain_command(study)}, then sensitivity robustness {study.study_name}-retrained")


def retrain_command(study) -> str:
    """The command that trains a study's models with kept weights again, into STUDY-retrained: for a study of
    framework defaults, `sensitivity transfer` (or `defaults`, where every model is its framework's own default)
    with its frameworks, datasets, defaults, seeds, regimes, budgets and cut, read from its trials."""
    trials = [t for t in trial_records(study) if t.user_attrs.get("weights")]
    attrs = [t.user_attrs for t in trials]
    specs = [a.get("spec") or {} for a in attrs]
    keep = "--keep-checkpoints" if any(s.get("keep_checkpoints") for s in specs) else "--keep-weights"
    new = f"--study {study.study_name}-retrained"
    if not trials or not all(a.get("default") for a in attrs):
        return f"the sweep that made study {study.study_name}, run again with {keep} {new}"
    command = "transfer" if any(not a.get("is_default") for a in attrs) else "defaults"

    def listed(values) -> str:
        return ",".join(sorted({str(v) for v in values if v is not None}))

    regimes = {s.get("semantics", "native") for s in specs}
    budgets = {a.get("budget", "epochs") for a in attrs}
    parts = [f"sensitivity {command}", f"--frameworks {listed(s.get('framework') for s in specs)}",
             f"--datasets {listed(s.get('dataset') for s in specs)}",
             f"--defaults {listed(a['default'] for a in attrs)}",
             f"--seeds {1 + max(int(s.get('seed', 0)) for s in specs)}",
             f"--semantics {'both' if len(regimes) > 1 else regimes.pop()}"]
    if budgets != {"epochs"}:
        parts.append(f"--budget {'both' if len(budgets) > 1 else budgets.pop()}")
    parts.append(_cut(attrs))
    return " ".join(p for p in parts + [keep, new] if p)


def _cut(attrs: list) -> str:
    """The budget cut the trials ran under: "" at the published budget, else --budget-epochs where every trial
    ran the same epochs, else --budget-fraction where every trial ran the same share of its published budget."""
    scales = {a.get("budget_scale", 1.0) for a in attrs}
    if scales == {1.0}:
        return ""
    epochs = {a.get("run_epochs") for a in attrs}
    if len(epochs) == 1 and None not in epochs:
        return f"--budget-epochs {epochs.pop():g}"
    return f"--budget-fraction {scales.pop():g}" if len(scales) == 1 else ""
