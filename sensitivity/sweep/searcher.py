"""A Ray Tune Searcher that asks and tells the Optuna study from the driver, which alone writes it.

One Tune trial is one Optuna trial. `suggest` asks the study (queued retries and seed siblings first),
`on_trial_result` records each epoch as an intermediate value (single objective only: Optuna 5 has no
intermediate values with several objectives) and keeps its point of the curve (each report carries its own
epoch's alone, so that a report costs the same at epoch 5,000 as at epoch 1: the curve seen is what a trial
stopped early or whose actor died keeps; a trial that ends carries its whole curve once, in its final result),
and `on_trial_complete` tells the outcome: COMPLETE for
ok and diverged runs (a diverged run is told its measured, chance-level score), PRUNED with its last
value for a run a scheduler stopped, FAIL with the reason for a failed or timed-out run, or for a
configuration that cannot be turned into a TrialSpec. Trials still live when Tune ends (time budget,
Ctrl-C) are told FAIL as interrupted and queued again. A trial another driver already finished (this one
was thought dead) is left as it is.

Each final trial is appended to the study's trial log (`trial_log`) before it is told to the study. A
storage call that fails beyond the storage's retry window marks the storage lost: the trial stays in the
log, no trial starts, and Tune is stopped (`StopOnLostStorage`); the driver then ends with one line, exit 1.

The counts an ask needs (trials that count towards N, trials waiting in the queue) are kept here: read
from the study once, at the first ask (after recovery), then updated on each ask, surplus and interruption,
so that an ask reads the storage O(1) times besides Optuna's own reads. Each ask also reads the drivers'
heartbeats (one small query): while another live driver shares the study, the counts are read from the
study again before each ask and the surplus check reads the trials (one full read each), since only the
storage knows what the others asked; a driver alone reads no trials per ask. A driver that starts after
an ask beats before its own first ask, so it asks only trials numbered after it, which the surplus check of
the trial before does not need.

The searcher is pickled by Tune (its tuner.pkl): the study, and with it the storage URL and its password,
is left out of that state and found again by the driver's id in this process (`_STUDIES`).
"""
from __future__ import annotations

import json
import logging
import uuid
from typing import Callable, Optional

from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState
from ray.tune import Callback, Stopper
from ray.tune.search import ConcurrencyLimiter, SearchGenerator, Searcher

from sensitivity import private_apis
from sensitivity.config.spaces import Space
from sensitivity.core.spec import TrialSpec
from sensitivity.studies import redaction, storage, storage_health
from sensitivity.studies.records import QUEUED_ATTRS, counts_towards_target, driver_alive, heartbeats, result_fields
from sensitivity.sweep import nodes, tune_files
from sensitivity.sweep.driver_storage import flush
from sensitivity.sweep.recovery import STALE_AFTER_S, orphan_attrs, requeue_orphans
from sensitivity.sweep.trial_log import log_trial

log = logging.getLogger(__name__)

PRUNED_FIELDS = ("accuracy", "val_accuracy", "loss", "train_time_s")  # what each epoch's report carries
RESULT_FIELDS = result_fields()
_STUDIES: dict = {}  # driver id -> (study, on_change): what a pickled searcher leaves out


class StudySearch(SearchGenerator):
    """Tune's SearchGenerator over the study's searcher (inside Tune's ConcurrencyLimiter, as Tune would wrap it),
    finished while the searcher has no trial left to give (`StudySearcher.exhausted`), not only once every trial
    is done: Tune then ends each actor as its trial ends, where it would keep one idle for a next trial, holding
    its CPU (and GPU) from the other drivers' trials on the cluster while this run's last trials finish. A trial
    to run again (its node lost) makes it unfinished, and Tune asks again."""

    def __init__(self, searcher: "StudySearcher", parallel: int):
        super().__init__(ConcurrencyLimiter(searcher, max_concurrent=parallel))
        self.study_searcher = searcher

    def is_finished(self) -> bool:
        return super().is_finished() or self.study_searcher.exhausted()


class StopOnLostStorage(Stopper):
    """Stops every trial once the storage is declared lost; holds nothing, so it pickles without secrets."""

    def __call__(self, trial_id, result) -> bool:
        return False

    def stop_all(self) -> bool:
        return storage_health.lost_reason() is not None


class DroppedTrials(Callback):
    """Ends, as orphans that never ran, queued again, the trials Tune sets ERROR without telling the searcher:
    when Tune cannot reuse a cached actor for a trial (its trainable's thread outlived TUNE_FUNCTION_THREAD_TIMEOUT_S),
    it sets the trial ERROR and removes the actor, but tells no searcher (ray 2.60, `TuneController._on_trial_reset`),
    so the trial would stay live, and the sweep wait for it, for ever. (Trials Tune stops at the run's end are
    TERMINATED untold too: `interrupt_live` ends them.) Watches only the trials not yet ended (new ones are those
    past the last count), so a step costs the same whatever the run's length; holds only the driver's id when
    pickled."""

    def __init__(self, driver_id: str):
        self.driver_id = driver_id
        self._seen, self._watched = 0, {}  # how many of Tune's trials were looked at; Tune trial id -> Trial

    def __getstate__(self) -> dict:
        return {"driver_id": self.driver_id}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["driver_id"])

    def on_step_end(self, iteration, trials, **info) -> None:
        self._watched.update((t.trial_id, t) for t in trials[self._seen:])
        self._seen = len(trials)
        ended = [(trial_id, trial.status) for trial_id, trial in self._watched.items()
                 if trial.status in ("ERROR", "TERMINATED")]
        searcher = nodes.searcher_of(self.driver_id)
        for trial_id, status in ended:
            del self._watched[trial_id]
            if status == "ERROR" and searcher is not None:
                searcher.dropped(trial_id)


class StudySearcher(Searcher):
    def __init__(self, study, space: Space, driver_id: str, target: int, run_options: dict,
                 on_change: Optional[Callable[[], None]] = None, weights_dir: Optional[str] = None,
                 pruning: bool = False, log_path=None, keep_checkpoints: bool = False, parallel: int = 1):
        metric = space.objectives[0].metric
        super().__init__(metric=metric, mode="max" if space.objectives[0].direction == "maximize" else "min")
        self.study, self.space, self.driver_id, self.target = study, space, driver_id, target
        self.run_options = run_options
        self.weights_dir = weights_dir  # where trials save their trained weights, when kept
        self.keep_checkpoints = keep_checkpoints  # and each epoch's
        self.parallel = parallel  # the most trials this driver runs at once
        self.max_live: Optional[int] = None  # the most live trials Tune allows (`set_max_concurrency`)
        self.on_change = on_change or (lambda: None)
        self.log_path = log_path  # the study's trial log (None: not logged)
        _STUDIES[driver_id] = (study, self.on_change)
        nodes.register(driver_id, self)  # NodeOfTrial tells it where each trial runs
        self.pruning = pruning  # a scheduler may stop trials early
        self.distributions = space.distributions()
        self.single_objective = len(space.objectives) == 1
        self.live: dict = {}  # Tune trial id -> Optuna trial
        self.reported: dict = {}  # Optuna trial number -> {epoch: intermediate value recorded}
        self.last_curve: dict = {}  # Tune trial id -> the points of the curve its reports carried, in order
        self.node_of: dict = {}  # Tune trial id -> the Ray node it was placed on (else reported from)
        self.taken: Optional[int] = None  # trials counting towards N (final or running); None: not read yet
        self.waiting = 0  # trials waiting in the queue
        self.shared = False  # another live driver beat at the last ask: the counts are read before each ask

    def __getstate__(self) -> dict:
        """What Tune pickles: no study (its storage holds the URL), no live trials, no callback."""
        return {**self.__dict__, "study": None, "on_change": None, "live": {}, "taken": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.study, self.on_change = _STUDIES.get(self.driver_id, (None, lambda: None))

    def save(self, checkpoint_path: str) -> None:
        pass  # the Optuna study is the record: nothing of Tune's to save

    def restore(self, checkpoint_path: str) -> None:
        pass

    def set_max_concurrency(self, max_concurrent: int) -> bool:
        """Tune's max_concurrent_trials: kept here, not by a ConcurrencyLimiter, whose count of live trials a trial
        Tune drops (`DroppedTrials`) would hold for ever."""
        self.max_live = max_concurrent
        return True

    def exhausted(self) -> bool:
        """Every trial of the target asked, none to run again (from the counts held: no storage read). A study
        other drivers share is left to `suggest`, which reads their counts."""
        return not self.shared and self.taken is not None and self.open_slots() <= 0

    def open_slots(self) -> int:
        """How many more trials may start: N minus the final trials and those running now."""
        if self.taken is None:
            self._count()
        return self.target - self.taken

    def _count(self, trials=None) -> None:
        """Read the counts from the study's trials (`trials`, else read now)."""
        trials = self.study.get_trials(deepcopy=False) if trials is None else trials
        self.taken = sum(counts_towards_target(t) for t in trials)
        self.waiting = sum(t.state == TrialState.WAITING for t in trials)

    def _others_alive(self) -> bool:
        """Whether another driver beats on this study (one read of the study's system attributes)."""
        return any(driver_alive(b, STALE_AFTER_S) for d, b in heartbeats(self.study).items() if d != self.driver_id)

    def suggest(self, trial_id: str) -> Optional[dict]:
        if storage_health.lost_reason() is not None:
            return Searcher.FINISHED
        try:
            return self._suggest(trial_id)
        except Exception as exc:
            self._storage_failed(exc, "asking for a trial")
            return Searcher.FINISHED

    def _storage_failed(self, exc: Exception, doing: str) -> None:
        """A storage call failed beyond the retry window: the storage is lost (else the error is a bug)."""
        if not storage.is_storage_error(exc):
            raise exc
        reason = f"{doing}: {redaction.reason(exc)}"
        log.warning("the storage failed %s; stopping the sweep", reason)
        storage_health.mark_lost(reason)

    def _suggest(self, trial_id: str) -> Optional[dict]:
        if self.max_live is not None and len(self.live) >= self.max_live:
            return None
        while True:  # a configuration that cannot run is told FAIL (it counts towards N) and the next asked
            if self.shared:
                self._count()
            if self.open_slots() <= 0:
                return Searcher.FINISHED if not self.live else None
            trial = self.study.ask(self.distributions)
            self.taken += 1
            self.waiting -= "fixed_params" in private_apis.asked_system_attrs(trial)  # popped from the queue
            trial.set_user_attr("driver", self.driver_id)
            trial.set_user_attr("parallel", self.parallel)  # how many trials ran beside it: their times share cores
            self.shared = self._others_alive()  # read after the ask: a driver beating later asks later trials
            if self._is_surplus(trial):
                return Searcher.FINISHED if not self.live else None
            try:
                spec = self._spec(trial)
            except Exception as exc:  # pydantic's ValidationError, a bad planned configuration
                why = str(exc).replace("\n", " ")[:500]
                self._finish(trial, TrialState.FAIL, None,
                             {"status": "failed", "reason": f"configuration cannot run: {type(exc).__name__}: {why}"})
                self.on_change()
                continue
            self.live[trial_id] = trial
            flush(self.study)  # its parameters and attributes in the study before it runs
            self.on_change()
            return {"spec": spec.model_dump(mode="json"), "optuna_trial": trial.number}

    def _spec(self, trial) -> TrialSpec:
        """The trial's TrialSpec (recorded as its `spec`); queues the seed siblings of a new configuration."""
        attrs = trial.user_attrs
        seed = attrs.get("seed", 0)
        if "config_id" not in attrs:
            config_id = uuid.uuid4().hex[:12]
            trial.set_user_attr("config_id", config_id)
            for sibling_seed in range(1, min(self.space.seeds, 1 + self._room_for_siblings())):
                self.study.enqueue_trial(trial.params, user_attrs={"config_id": config_id, "seed": sibling_seed})
                self.waiting += 1
        trial.set_user_attr("seed", seed)
        spec = self.space.trial_spec(trial.params, seed, **self.run_options)
        if attrs.get("planned"):  # a planned configuration (a framework default) overrides the space's
            run = {k: v for k, v in self.run_options.items() if v is not None}
            spec = TrialSpec(**{**spec.model_dump(), **attrs["planned"], "seed": seed, **run})
        if self.weights_dir:
            weights = f"{self.weights_dir}/{trial.number}.npz"
            spec = spec.model_copy(update={"keep_weights": weights, "keep_checkpoints": self.keep_checkpoints})
            trial.set_user_attr("weights", weights)
        trial.set_user_attr("spec", spec.model_dump(mode="json"))  # exactly what ran: reruns, robustness
        return spec

    def _room_for_siblings(self) -> int:
        """Trials N leaves after those final, running (this one included) and queued: seed siblings beyond
        N are not queued, so with N not a multiple of the seeds the last configuration has fewer seeds."""
        return max(0, self.target - self.taken - self.waiting)

    def _is_surplus(self, trial) -> bool:
        """Another driver asked at the same time and the N-th trial has a lower number than this one:
        tell this one FAIL as a surplus, before it runs, and queue its parameters again if queued. A driver
        alone cannot have one (open_slots was positive before the ask): it reads nothing."""
        if not self.shared:
            return False
        trials = self.study.get_trials(deepcopy=False)
        self._count(trials)
        if sum(t.number < trial.number and counts_towards_target(t) for t in trials) < self.target:
            return False
        queued = {k: v for k, v in trial.user_attrs.items() if k in QUEUED_ATTRS}
        trial.set_user_attr("surplus", True)
        trial.set_user_attr("status", "failed")
        trial.set_user_attr("reason", f"not run: the study already had {self.target} trials")
        self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        self._uncount()
        if queued:
            self.study.enqueue_trial(trial.params, user_attrs=queued)
            self.waiting += 1
        return True

    def placed(self, trial_id: str, node_id: str) -> None:
        """The trial's actor runs on Ray node `node_id` (`NodeOfTrial`): recorded before its first report, so
        that the node's loss at any moment makes it an orphan."""
        self.node_of[trial_id] = node_id
        trial = self.live.get(trial_id)
        if trial is None:
            return
        try:
            trial.set_user_attr("ray_node_id", node_id)
            flush(self.study)
        except Exception as exc:
            self._storage_failed(exc, f"recording the node of trial {trial.number}")

    def on_trial_result(self, trial_id: str, result: dict) -> None:
        trial = self.live.get(trial_id)
        if trial is None or result.get("final"):
            return
        _add_point(self.last_curve.setdefault(trial_id, []), result)
        try:
            if result.get("ray_node_id") and trial_id not in self.node_of:
                self.node_of[trial_id] = result["ray_node_id"]
                trial.set_user_attr("ray_node_id", result["ray_node_id"])
            self._record_epoch(trial, result)
        except UpdateFinishedTrialError:  # finished by another driver that thought this one dead
            log.warning("trial %s was finished elsewhere; its results here are dropped", trial.number)
            self.taken = None  # an orphan now, and queued again: read the counts at the next ask
        except Exception as exc:
            self._storage_failed(exc, f"recording an epoch of trial {trial.number}")

    def _record_epoch(self, trial, result: dict) -> None:
        """The epoch's value as an intermediate value (single objective only), once per epoch."""
        step = self._new_epoch(trial, result)
        if step is not None:
            trial.report(step[1], step=step[0])
            self.reported.setdefault(trial.number, {})[step[0]] = step[1]  # kept here: no storage read per epoch

    def _new_epoch(self, trial, result) -> Optional[tuple]:
        """(epoch, value) of a report not yet recorded as an intermediate value, else None."""
        value, epoch = (result or {}).get(self.metric), (result or {}).get("epoch")
        if self.single_objective and value is not None and epoch is not None \
                and int(epoch) not in self.reported.get(trial.number, {}):
            return int(epoch), value
        return None

    def on_trial_complete(self, trial_id: str, result: Optional[dict] = None, error: bool = False) -> None:
        trial = self.live.pop(trial_id, None)
        if trial is None:
            return
        curve = self.last_curve.pop(trial_id, None)
        node = self.node_of.pop(trial_id, None)
        ray_log = tune_files.log_tail(trial_id) if error else tune_files.forget(trial_id)
        try:
            if error and node is not None and nodes.node_lost(node):  # no fault of the trial's: run it again
                log.warning("trial %s: Ray node %s was lost while it ran; it runs again", trial.number, node)
                self._orphan(trial, f"orphaned: Ray node {node} was lost while the trial ran")
                requeue_orphans(self.study)
            else:
                if error:
                    log.warning("trial %s failed: its Ray actor died or raised on node %s, which is alive (the "
                                "tail of Ray's log of it: the trial's ray_log)", trial.number, node or "unknown")
                self._tell(trial, result, error, curve, node, ray_log)
        except UpdateFinishedTrialError:  # finished by another driver that thought this one dead
            log.warning("trial %s was finished elsewhere; its result here is dropped", trial.number)
            self.taken = None
        except Exception as exc:  # Tune would swallow it, and the trial would stay RUNNING unnoticed
            self._storage_failed(exc, f"writing trial {trial.number}")
        self.reported.pop(trial.number, None)
        if storage_health.lost_reason() is None:
            self.on_change()

    def _tell(self, trial, result: Optional[dict], error: bool, curve, node: Optional[str] = None,
              ray_log: Optional[str] = None) -> None:
        if result and result.get("final"):
            payload = json.loads(result["result_json"])
            # the spec as it ran (device gpu:N), else as asked; per-sample correctness only where recorded
            attrs = {name: payload.get(name) for name in RESULT_FIELDS
                     if name not in ("spec", "test_correct") or payload.get(name)}
            values = [payload.get(o.metric) for o in self.space.objectives]
            trained = payload["status"] in ("ok", "diverged")
            if trained and None in values:
                attrs["reason"] = f"no value for an objective: {values}"
            state = TrialState.COMPLETE if trained and None not in values else TrialState.FAIL
            # the last epoch comes with the final report
            self._finish(trial, state, values, attrs, result if trained else None)
        elif result and not error and self.pruning:  # stopped early by the scheduler, on the result given here
            attrs = {"status": "pruned", "reason": f"stopped by the scheduler after epoch {result.get('epoch')}",
                     "curve": _add_point(curve or [], result),
                     **{name: result.get(name) for name in PRUNED_FIELDS}}  # what the last report measured
            self._finish(trial, TrialState.PRUNED, None, attrs, result)
        elif result and not error:  # stopped, but by no scheduler: the run ended around it
            self._interrupt(trial, "interrupted: Tune stopped the trial before its end")
        else:
            where = f"on Ray node {node}, which is alive" if node else "on a Ray node not known"
            attrs = {"status": "failed", "reason": f"the Ray trial's actor died or raised an error {where} (the tail "
                                                   "of Ray's log of it: ray_log)"}
            if ray_log:  # Tune's error.txt and the actor's stderr, kept before Tune's folder is removed
                attrs["ray_log"] = ray_log
            if curve:  # the epochs it reported before its actor died
                attrs["curve"] = curve
            self._finish(trial, TrialState.FAIL, None, attrs)

    def _finish(self, trial, state, values, attrs: dict, last_report: Optional[dict] = None) -> None:
        """Append the final trial to the log first (storage writes may fail), then write its last epoch, its
        attributes and its state to the study. A pruned trial's value is its last intermediate value, as
        Optuna records it; only a COMPLETE trial is told values."""
        values = values if state == TrialState.COMPLETE else None
        intermediate = dict(self.reported.get(trial.number, {}))
        step = self._new_epoch(trial, last_report)
        if step is not None:
            intermediate[step[0]] = step[1]
        if state == TrialState.PRUNED and intermediate:
            values = [intermediate[max(intermediate)]]
        if self.log_path is not None:
            log_trial(self.log_path, trial, state, values, intermediate, attrs)
        if last_report is not None:
            self._record_epoch(trial, last_report)
        for name, value in attrs.items():
            trial.set_user_attr(name, value)
        self.study.tell(trial, values if state == TrialState.COMPLETE else None, state=state, skip_if_finished=True)

    def dropped(self, trial_id: str) -> None:
        """Tune set the trial ERROR without telling its end (`DroppedTrials`): if still live here, an orphan that
        never ran, queued again as the same attempt."""
        trial = self.live.pop(trial_id, None)
        if trial is None or storage_health.lost_reason() is not None:
            return
        self.last_curve.pop(trial_id, None)
        self.node_of.pop(trial_id, None)
        self.reported.pop(trial.number, None)
        log.warning("trial %s: Ray Tune ended it in error before it ran (it could not reuse an actor for it); it "
                    "runs again", trial.number)
        try:
            self._orphan(trial, "not run: Ray Tune ended the trial in error before it ran (it could not reuse an "
                                "actor for it)", ran=False)
            requeue_orphans(self.study)
        except UpdateFinishedTrialError:
            pass
        except Exception as exc:
            self._storage_failed(exc, f"writing trial {trial.number}")
        self.taken = None  # an orphan queued again: read the counts at the next ask
        if storage_health.lost_reason() is None:
            self.on_change()

    def interrupt_live(self, reason: str) -> list:
        """Tell every trial still live FAIL as interrupted and queue its parameters again; their numbers."""
        numbers = []
        if storage_health.lost_reason() is not None:  # nothing can be written: a rerun finds them RUNNING
            self.live.clear()
            return numbers
        for trial_id in list(self.live):
            trial = self.live.pop(trial_id)
            try:
                self._interrupt(trial, reason)
                numbers.append(trial.number)
            except UpdateFinishedTrialError:
                pass
        if numbers:
            requeue_orphans(self.study)
            self.on_change()
        self.taken = None  # orphans queued again: read the counts at the next ask
        return numbers

    def _interrupt(self, trial, reason: str) -> None:
        """FAIL as an orphan (see `_orphan`) with `interrupted` set."""
        self._orphan(trial, reason, interrupted=True)

    def _orphan(self, trial, reason: str, ran: bool = True, **flags) -> None:
        """FAIL, marked as an orphan: not counted towards N, and queued again by requeue_orphans unless it was
        its configuration's last attempt (recovery.orphan_attrs)."""
        attrs = {**orphan_attrs(trial, reason, ran), **flags}
        for name, value in attrs.items():
            trial.set_user_attr(name, value)
        self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
        if attrs["orphaned"]:
            self._uncount()

    def _uncount(self) -> None:
        """One trial this driver asked no longer counts towards N (an orphan, a surplus)."""
        if self.taken is not None:
            self.taken -= 1


def _add_point(curve: list, result: Optional[dict]) -> list:
    """`curve` with the point of the curve an epoch's report carries (`point_json`) added, unless the curve
    holds that epoch already (the result a scheduler stops a trial on may have been recorded before)."""
    text = (result or {}).get("point_json")
    if text:
        point = json.loads(text)
        if not curve or point.get("epoch") is None or point["epoch"] > curve[-1].get("epoch", -1):
            curve.append(point)
    return curve
