"""`sensitivity robustness`: attack the trained models of a study, by a protocol fixed before any attack
(search_spaces/robustness.yaml, `robustness_protocol`), and record what each model keeps, sample by sample.

Sets. The attackable models are the study's completed trials (status ok) of the regimes asked whose weights were
kept (`--keep-weights`). They are grouped into the sets whose models are compared with each other (`model_sets`):
in a study of defaults, each framework's own default at home ("own", per regime and dataset) and each default on
every framework that ran it ("config": the same configuration, per regime, dataset and default); in any other
study, the models of one regime and dataset ("all").

Matched clean accuracy. A set's target is the lowest final validation accuracy among its models, fixed before any
attack. Of the checkpoints a model kept (`--keep-checkpoints`, the trained weights being the last), the two that
bracket the target are kept and the others deleted; the one whose validation accuracy is nearer the target is the
model's matched state in that set. A set with a model that kept no checkpoints has no matched states: it is
compared at the published budget only.

Attacks. Every state (each model as trained, and each matched checkpoint) is attacked white-box on the whole test
set at every eps of the protocol's grid. Transfer attacks have one source per dataset and seed: the protocol's
surrogate, a model no compared framework trained, trained on one framework with that seed and attacked white-box,
its examples saved under robustness/STUDY/ beside the storage's file (results/robustness/STUDY/ for a database
server). Every state of that dataset and seed is tested on those examples (`transfer[SURROGATE]`), and its state
records which surrogate made them (`surrogate`): every target meets the same examples, made without any compared
model's gradient. The driver writes the protocol with its sets and targets (study attribute `robustness_protocol`)
before the first attack, then one record per trial (`robustness:NUMBER`: {"published": state, "checkpoints":
{epoch: state}}) as soon as it is made. A run replaces earlier runs' records; a model whose attack failed is
reported and has none. A run that attacked every model then removes their weights and the surrogates' files,
unless asked to keep them (`robustness_weights`: a later run of the study is refused, naming the command that
trains them again).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from sensitivity import datasets
from sensitivity.core import paths
from sensitivity.analysis.tables.robustness import PREFIX
from sensitivity.analysis.tables.robustness_pairs import PROTOCOL_ATTR, SURROGATE  # SURROGATE: the source's key in a state
from sensitivity.experiments import robustness_weights
from sensitivity.experiments.robustness_protocol import ProtocolError, load
from sensitivity.core.spec import TrialSpec
from sensitivity.studies.specs import trial_spec
from sensitivity.studies.trial_rows import trial_records
from sensitivity.trial.loop import checkpoint_path
from sensitivity.trial.pool import WorkerPool
from sensitivity.trial.runner import WorkerError, worker_setup

ATTACK_TIMEOUT_S = 3600.0


class RobustnessError(Exception):
    """The study has nothing to attack, or an option or the protocol is wrong: one line, exit 2."""


def attackable(study, defaults_only: bool = False, regimes=("native",)) -> list:
    """The completed trials (status ok; `trial_rows.TrialRecord`s) of the given regimes whose kept weights are on
    this disk; with `defaults_only`, only each framework's own default."""
    if not any(t.state == "COMPLETE" and t.user_attrs.get("weights") for t in trial_records(study, ("weights",))):
        return []  # nothing kept: known without reading every attribute (curves, logs) of every trial
    chosen = []
    for trial in trial_records(study):
        attrs = trial.user_attrs
        if trial.state != "COMPLETE" or attrs.get("status") != "ok" or not attrs.get("weights"):
            continue
        if defaults_only and not attrs.get("own_default"):
            continue
        if trial_spec(study, trial).semantics not in regimes:
            continue
        if Path(attrs["weights"]).exists():
            chosen.append(trial)
    return chosen


def model_sets(trials: list, specs: dict) -> list:
    """The sets of models compared with each other (see the module): [{key, kind, regime, dataset, default,
    members: [trial numbers]}], each with models of two frameworks or more."""
    groups: dict = {}
    for trial in trials:
        spec, attrs = specs[trial.number], trial.user_attrs
        base = (spec.semantics, spec.dataset)
        if attrs.get("default"):
            if attrs.get("own_default"):
                groups.setdefault(("own", *base, None), []).append(trial)
            groups.setdefault(("config", *base, attrs["default"]), []).append(trial)
        else:
            groups.setdefault(("all", *base, None), []).append(trial)
    out = []
    for (kind, regime, dataset, default), members in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if len({specs[t.number].framework for t in members}) < 2:
            continue
        key = "/".join(p for p in (kind, regime, dataset, default) if p)
        out.append({"key": key, "kind": kind, "regime": regime, "dataset": dataset, "default": default,
                    "members": sorted(t.number for t in members)})
    return out


def match(sets: list, trials: dict) -> tuple:
    """Each set's target and each member's matched checkpoint ({number: epoch}, None for the trained weights
    themselves; the set's `matched` is None where a member kept no checkpoints or no validation accuracy), and
    per trial the checkpoint epochs to keep; see the module."""
    keep: dict = {}
    for one in sets:
        members = [trials[n] for n in one["members"]]
        finals = [t.user_attrs.get("val_accuracy") for t in members]
        one["target"] = min(finals) if None not in finals else None
        one["matched"], complete = {}, one["target"] is not None
        for trial in members:
            found = _bracket(trial, one["target"])
            if found is None:
                complete = False
                continue
            epoch, bracket = found
            one["matched"][str(trial.number)] = epoch
            keep.setdefault(trial.number, set()).update(bracket)
        if not complete:
            one["matched"] = None  # compared at the published budget only
    return sets, keep


def _bracket(trial, target):
    """`nearest_bracket` of a trial's checkpoints (those on disk, the trained weights last), or None without
    checkpoints or a target."""
    if target is None:
        return None
    weights, curve = trial.user_attrs["weights"], trial.user_attrs.get("curve") or []
    points = [(p["epoch"], p["val_accuracy"]) for p in curve[:-1]
              if p.get("val_accuracy") is not None and Path(checkpoint_path(weights, p["epoch"])).exists()]
    if not points or not curve or curve[-1].get("val_accuracy") is None:
        return None
    return nearest_bracket([*points, (None, trial.user_attrs["val_accuracy"])], target)


def nearest_bracket(points: list, target: float) -> tuple:
    """`points`: [(epoch, validation accuracy)] in order, the trained weights last as (None, final), final >=
    target. (the epoch of the nearer of the two checkpoints around the first that reaches `target`, None for
    the trained weights; the epochs of those two)."""
    above = next(i for i, (_, val) in enumerate(points) if val >= target - 1e-12)
    bracket = points[max(0, above - 1): above + 1]
    nearest = min(reversed(bracket), key=lambda p: abs(p[1] - target))  # a tie: the one above
    return nearest[0], tuple(e for e, _ in bracket if e is not None)


def _prune(trials: dict, keep: dict) -> int:
    """Delete the checkpoints no set needs; returns how many were deleted."""
    deleted = 0
    for number, epochs in keep.items():
        trial = trials[number]
        for point in (trial.user_attrs.get("curve") or [])[:-1]:
            path = Path(checkpoint_path(trial.user_attrs["weights"], point["epoch"]))
            if point["epoch"] not in epochs and path.exists():
                path.unlink()
                deleted += 1
    return deleted


def attack_study(study, samples: Optional[int] = None, defaults_only: bool = False,
                 log: Optional[Callable[[str], None]] = None, regimes=("native",), protocol_path=None,
                 surrogate_root=None, keep_weights: bool = False) -> tuple:
    """Attack every attackable model of `study` by the protocol; returns ({trial number: record} as written in
    the study, {trial number: why its attack failed}). The surrogates' files go under `surrogate_root`/STUDY
    (`robustness` beside the storage: `studies.storage.folder_beside`; default results/robustness). Where every
    attack succeeded, the models' weights and the surrogates' files are then removed unless `keep_weights`
    (`robustness_weights`)."""
    log = log or (lambda message: None)
    try:
        protocol, recorded = load(protocol_path)
    except ProtocolError as exc:
        raise RobustnessError(str(exc)) from None
    trials = attackable(study, defaults_only, regimes)
    if not trials:
        refusal = robustness_weights.removed_refusal(study)
        if refusal:
            raise RobustnessError(refusal)
        which = ("own defaults" if defaults_only else "completed trials") + f" ({' or '.join(regimes)})"
        raise RobustnessError(f"study {study.study_name} has no {which} with kept weights on this disk: run the "
                              "sweep (or defaults, transfer) with --keep-weights")
    try:
        out_dir = paths.under(surrogate_root or paths.RESULTS / "robustness", study.study_name).resolve()
    except paths.UnsafeName as exc:
        raise RobustnessError(str(exc)) from None
    by_number = {t.number: t for t in trials}
    specs = {t.number: trial_spec(study, t) for t in trials}
    sets, keep = match(model_sets(trials, specs), by_number)
    for key in [k for k, v in study.user_attrs.items() if k.startswith(PREFIX) and v is not None]:
        study.set_user_attr(key, None)  # a run replaces the records of earlier ones (Optuna deletes none)
    study.set_user_attr(PROTOCOL_ATTR, {**recorded, "samples": samples, "sets": sets})  # before any attack
    log(f"robustness: {len(trials)} models in {len(sets)} sets; {_prune(by_number, keep)} checkpoints deleted "
        "(kept: those that bracket a target)")
    states = [(t.number, None) for t in trials] + sorted({(int(n), e) for s in sets for n, e in
                                                          (s["matched"] or {}).items() if e is not None})
    records, failures, workers = {}, {}, WorkerPool()
    grids = {n: list(protocol.grid(specs[n].dataset)) for n in by_number}
    requests = {state: {**_request(specs[state[0]], by_number[state[0]], state[1], list(protocol.attacks),
                                   grids[state[0]], samples), "check_eps": protocol.checks.eps} for state in states}
    made = {}

    def run(state, request: dict):
        try:
            with workers.lent(*worker_setup(specs[state[0]])) as worker:
                return worker.attack(request, timeout=ATTACK_TIMEOUT_S)
        except WorkerError as exc:  # one model's failure is reported; the others go on
            failures[state[0]] = str(exc).splitlines()[0] if str(exc) else "worker error"
            log(f"trial {state[0]}: attack failed: {failures[state[0]]}")
            return None

    try:
        for state in states:  # white-box
            log(f"attacking {_describe(state, specs)}")
            result = run(state, requests[state])
            if result is not None:
                made[state] = {**result, "eps": grids[state[0]], "attacks": list(protocol.attacks),
                               "epoch": state[1], "val_accuracy": _val_at(by_number[state[0]], state[1])}
        surrogates = _surrogates(protocol, sorted({(specs[n].dataset, specs[n].seed) for n in by_number}),
                                 specs[trials[0].number], samples, out_dir, workers, log)
        for state in [s for s in states if s in made]:  # transfer: every target of a seed meets its surrogate's
            surrogate = surrogates.get((specs[state[0]].dataset, specs[state[0]].seed))
            if surrogate is None:
                continue
            result = run(state, {**requests[state], "attacks": [], "check_eps": None,
                                 "evaluate": {SURROGATE: surrogate["examples"]}})
            if result is not None:
                made[state].update(transfer=result["transfer"], transfer_correct=result["transfer_correct"],
                                   surrogate=surrogate["record"])
    finally:
        workers.close()
    for number in by_number:
        if (number, None) not in made or number in failures:
            continue
        checkpoints = {str(e): made[(n, e)] for n, e in made if n == number and e is not None}
        records[number] = {"published": made[(number, None)], "checkpoints": checkpoints}
        study.set_user_attr(f"{PREFIX}{number}", records[number])
    if keep_weights or failures:
        log("robustness: weights kept" + (f" ({len(failures)} models' attacks failed: a rerun needs them)"
                                          if failures and not keep_weights else ""))
    else:
        removed = robustness_weights.remove_attacked(study, trials, out_dir)
        log(f"robustness: {removed} weights files removed, every model attacked (robustness --keep-checkpoints "
            "keeps them)")
    return records, failures


def _surrogates(protocol, keys: list, template: TrialSpec, samples, out_dir: Path, workers: WorkerPool,
                log) -> dict:
    """{(dataset, seed): {"examples": path, "record": what it was}}: the protocol's surrogate trained once per
    dataset and seed on its one framework, then attacked white-box, its examples saved (see the module); a
    dataset and seed whose surrogate failed is logged and has none."""
    found = {}
    for dataset, seed in keys:
        s = protocol.surrogate
        weights = out_dir / f"surrogate-{dataset}-{seed}.weights.npz"
        spec = TrialSpec(framework=s.framework, dataset=dataset, data_dir=template.data_dir, model=s.model,
                         layers=s.layers, epochs=s.epochs, optimizer=s.optimizer, lr=s.lr, batch_size=s.batch_size,
                         seed=seed, keep_weights=str(weights))
        log(f"training the surrogate for {dataset}, seed {seed}: {s.describe()}")
        try:
            with workers.lent(*worker_setup(spec)) as worker:
                trained = worker.run(spec)
                if trained.status != "ok":
                    raise WorkerError(f"training {trained.status}: {trained.reason}")
                request = {"spec": spec.model_copy(update={"keep_weights": None}).model_dump(mode="json"),
                           "data": str(datasets.prepare(dataset, spec.data_dir)), "model": s.model,
                           "weights": str(weights), "samples": samples, "attacks": list(protocol.attacks),
                           "eps": list(protocol.grid(dataset)),
                           "save_examples": str(out_dir / f"surrogate-{dataset}-{seed}.npz")}
                attacked = worker.attack(request, timeout=ATTACK_TIMEOUT_S)
        except WorkerError as exc:
            log(f"surrogate for {dataset}, seed {seed}: failed: {str(exc).splitlines()[0] if str(exc) else exc}; "
                "its targets have no transfer attack")
            continue
        record = {"model": s.model, "framework": s.framework, "seed": seed, "dataset": dataset,
                  "describe": s.describe(), "clean": attacked["clean"], "white_box": attacked["white_box"]}
        found[(dataset, seed)] = {"examples": request["save_examples"], "record": record}
    return found


def _describe(state: tuple, specs: dict) -> str:
    spec = specs[state[0]]
    what = "as trained" if state[1] is None else f"checkpoint after epoch {state[1]}"
    return f"trial {state[0]} ({spec.framework}, {spec.semantics}, {what})"


def _val_at(trial, epoch):
    if epoch is None:
        return trial.user_attrs.get("val_accuracy")
    return next((p.get("val_accuracy") for p in trial.user_attrs.get("curve") or [] if p["epoch"] == epoch), None)


def _request(spec: TrialSpec, trial, epoch, attacks, eps, samples) -> dict:
    spec = spec.model_copy(update={"keep_weights": None, "keep_checkpoints": False})
    weights = trial.user_attrs["weights"] if epoch is None else checkpoint_path(trial.user_attrs["weights"], epoch)
    return {"spec": spec.model_dump(mode="json"), "data": str(datasets.prepare(spec.dataset, spec.data_dir)),
            "model": spec.model or datasets.REGISTRY[spec.dataset].default_model, "weights": weights,
            "samples": samples, "attacks": attacks, "eps": eps, "save_examples": None}
