"""`sensitivity robustness`: attack the trained models of a study and record the accuracies in it.

Each model is a completed trial (status ok) whose weights were kept (`sweep --keep-weights`). In a warm
worker of its framework's environment it is attacked white-box through its own input gradient
(`sensitivity.attacks`), on the first `samples` test samples of its dataset, at each epsilon; the examples
are saved under results/robustness/STUDY/. Then each model is tested on the examples every other model of
the same dataset and model made (transfer attacks). The driver writes one record per model in the study
(user attribute `robustness:NUMBER`); the analysis reads them from there. A run replaces the records of
earlier runs; a model whose attack failed is reported and has none.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from sensitivity import datasets, frameworks, paths
from sensitivity.analysis.robustness import PREFIX
from sensitivity.attacks import ATTACKS
from sensitivity.spec import TrialSpec
from sensitivity.sweep.records import trial_spec
from sensitivity.trial.runner import Worker, WorkerError

DEFAULT_EPS = (0.0, 0.05, 0.1, 0.2, 0.3)
ATTACK_TIMEOUT_S = 3600.0


class RobustnessError(Exception):
    """The study has nothing to attack, or an option is wrong: one line, exit 2."""


def attackable(study, defaults_only: bool = False, regimes=("native",)) -> list:
    """The completed trials (status ok) of the given regimes whose kept weights are on this disk; with
    `defaults_only`, only each framework's own default."""
    from optuna.trial import TrialState

    chosen = []
    for trial in study.get_trials(deepcopy=False):
        attrs = trial.user_attrs
        if trial.state != TrialState.COMPLETE or attrs.get("status") != "ok" or not attrs.get("weights"):
            continue
        if defaults_only and not attrs.get("own_default"):
            continue
        if trial_spec(study, trial).semantics not in regimes:
            continue
        if Path(attrs["weights"]).exists():
            chosen.append(trial)
    return chosen


def attack_study(study, attacks=ATTACKS, eps=DEFAULT_EPS, samples: int = 500, defaults_only: bool = False,
                 log: Optional[Callable[[str], None]] = None, regimes=("native",)) -> tuple:
    """Attack every attackable model of `study`; returns ({trial number: record} as written in the study,
    {trial number: why its attack failed})."""
    log = log or (lambda message: None)
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown or not attacks:
        raise RobustnessError(f"--attack {','.join(unknown) or '(none)'}: allowed {', '.join(ATTACKS)}")
    if any(e < 0 for e in eps) or not eps:
        raise RobustnessError("--eps: one or more epsilons >= 0")
    trials = attackable(study, defaults_only, regimes)
    if not trials:
        which = ("own defaults" if defaults_only else "completed trials") + f" ({' or '.join(regimes)})"
        raise RobustnessError(f"study {study.study_name} has no {which} with kept weights on this disk: run the "
                              "sweep (or defaults, transfer) with --keep-weights")
    try:
        out_dir = paths.under(paths.RESULTS / "robustness", study.study_name).resolve()
    except paths.UnsafeName as exc:
        raise RobustnessError(str(exc)) from None
    specs = {t.number: trial_spec(study, t) for t in trials}
    requests = {t.number: _request(specs[t.number], t, attacks, eps, samples, out_dir / f"{t.number}.npz")
                for t in trials}
    for key in [k for k, v in study.user_attrs.items() if k.startswith(PREFIX) and v is not None]:
        study.set_user_attr(key, None)  # a run replaces the records of earlier ones (Optuna deletes none)
    workers: dict = {}
    records, failures = {}, {}

    def record(number: int, request: dict, update) -> None:
        try:
            result = _worker(workers, specs[number]).attack(request, timeout=ATTACK_TIMEOUT_S)
        except WorkerError as exc:  # one model's failure is reported; the others go on
            failures[number] = str(exc).splitlines()[0] if str(exc) else "worker error"
            log(f"trial {number}: attack failed: {failures[number]}")
            return
        records[number] = update(result)
        study.set_user_attr(f"{PREFIX}{number}", records[number])  # kept as soon as made

    try:
        for trial in trials:  # white-box, saving each model's examples
            log(f"attacking trial {trial.number} ({specs[trial.number].framework})")
            record(trial.number, requests[trial.number], lambda result: {**result, "eps": list(eps),
                                                                          "attacks": list(attacks)})
        for number in list(records):  # transfer: every other model's examples of the same data and model
            mine = requests[number]
            others = {str(n): requests[n]["save_examples"] for n in records
                      if n != number and _same_inputs(requests[n], mine)}
            if others:
                record(number, {**mine, "attacks": [], "evaluate": others, "save_examples": None},
                       lambda result, number=number: {**records[number], "transfer": result["transfer"]})
    finally:
        for worker in workers.values():
            worker.close()
    return records, failures


def _same_inputs(a: dict, b: dict) -> bool:
    return (a["data"], a["model"], a["samples"]) == (b["data"], b["model"], b["samples"])


def _request(spec: TrialSpec, trial, attacks, eps, samples: int, examples: Path) -> dict:
    spec = spec.model_copy(update={"keep_weights": None})
    return {"spec": spec.model_dump(mode="json"), "data": str(datasets.prepare(spec.dataset, spec.data_dir)),
            "model": spec.model or datasets.REGISTRY[spec.dataset].default_model, "weights": trial.user_attrs["weights"],
            "samples": samples, "attacks": list(attacks), "eps": list(eps), "save_examples": str(examples)}


def _worker(workers: dict, spec: TrialSpec):
    variables = frameworks.worker_variables(spec)
    key = (frameworks.FRAMEWORKS[spec.framework].env, tuple(sorted(variables.items())))
    if key not in workers:
        workers[key] = Worker(key[0], variables)
    return workers[key]
