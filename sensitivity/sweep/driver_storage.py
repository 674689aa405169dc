"""The driver's view of an RDB study: Optuna's cache, with the trials this driver runs kept in memory and
their writes grouped into few transactions.

Optuna's cache (`_CachedStorage`, which `private_apis.CachedStorage` opens to this module) reads every
unfinished trial again, whole, on each `get_all_trials`, which the trial queue and the sampler call about
twice per ask; with 1,000 trials running that is 2,000 trials read per ask, and a driver falls to about one
completion a second. It also writes each parameter, attribute and intermediate value in a transaction of
its own: about 45 per trial.

A running trial this driver asked is written by this driver alone (another driver finishes it only once
this one stopped beating, and then this one's next write is refused), so `DriverStorage` keeps it current
in memory: each write is applied to the cached trial at once, and reads skip it. Other trials (other
drivers', the queue's) are read once, and again only when their state changes.

Writes to such a trial are held, and written together in one transaction:
- when the searcher hands the trial to Tune (`flush`): its parameters and attributes are then in the
  study, so a killed driver's trial is found RUNNING and requeued with its parameters, as before;
- with its final state: the result's attributes, values and state in one transaction, so a final trial
  never lacks an attribute;
- otherwise (intermediate values) at the first write `FLUSH_EVERY_S` after the last transaction, and at
  each heartbeat. A driver killed loses at most the epochs recorded in the seconds since then; its trial
  keeps the curve up to there.
A trial another driver finished meanwhile is not written: its held writes are dropped, with a warning,
and a final state for it raises UpdateFinishedTrialError as Optuna's storage does.

The driver's copy of a trial leaves out the user attributes in NOT_CACHED (`curve`, `stderr_tail`, `spec`):
they are written to the study, and read from it by the analysis, by Optuna and by optuna-dashboard, but the
driver reads none of them, and at 100,000 trials they are most of its memory and of the time to open a
study. Trials are read by SQL, a statement per table, and equal `env` records share one object; the
statements, and the bulk writes of held writes, are `driver_sql`'s.
"""
from __future__ import annotations

import copy
import datetime
import json
import logging
import time

from optuna.distributions import check_distribution_compatibility
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from sensitivity import private_apis
from sensitivity.studies.storage_health import retried
from sensitivity.sweep import driver_sql

FLUSH_EVERY_S = 1.0
SHARED_ATTRS = ("env",)  # user attributes equal across most trials: one object in memory for each value
# the bulk of a finished trial's user attributes, which the driver writes but never reads: in the study, not
# in the driver's memory (at 100,000 trials they would hold gigabytes and most of the time to open a study)
NOT_CACHED = ("curve", "stderr_tail", "spec", "test_correct")
SHARED_MAX = 10_000
UNFINISHED = (TrialState.RUNNING, TrialState.WAITING)
UPSERT_DIALECTS = ("postgresql", "sqlite")  # ON CONFLICT: the RDB storages `open_storage` opens
log = logging.getLogger(__name__)


def driver_view(storage):
    """`DriverStorage` over an RDB storage whose database it can write in bulk; any other storage as it is."""
    # lazy: optuna
    import optuna
    if isinstance(storage, optuna.storages.RDBStorage) and storage.engine.name in UPSERT_DIALECTS:
        return DriverStorage(storage)
    return storage


def flush(study) -> None:
    """Write what the study's driver storage holds (nothing to do for another storage)."""
    storage = private_apis.study_storage(study)
    if isinstance(storage, DriverStorage):
        storage.flush()


class _Held:
    """Writes held for one trial."""

    def __init__(self):
        self.params, self.user_attrs, self.system_attrs, self.intermediate = [], {}, {}, {}


class DriverStorage(private_apis.CachedStorage):
    def __init__(self, backend) -> None:
        super().__init__(backend)
        self.url = backend.url  # for the retry's log line
        self._owned: dict = {}  # trial id -> the cached trial: running, asked by this driver, current here
        self._created_here: set = set()  # trials made here since the last read (current in the cache)
        self._seen: dict = {}  # study id -> the highest trial id read or made here
        self._held: dict = {}  # trial id -> _Held
        self._last_write = 0.0
        self._ordered: dict = {}  # study id -> its cached trials by number (None: to sort again)
        self._shared: dict = {}  # JSON text -> its decoded object, shared by the cached trials

    # Reads ------------------------------------------------------------------------------------------

    def get_all_trials(self, study_id: int, deepcopy: bool = True, states=None) -> list:
        """Optuna's answer, from an ordered list kept as trials are cached (Optuna sorts every trial on each
        call); the unfinished states (the queue) are looked up among the unfinished trials only."""
        self.read_trials(study_id)
        with self.lock:
            study = self.studies[study_id]
            if states is not None and all(not s.is_finished() for s in states):
                unfinished = study.unfinished_trial_ids  # the queue and other drivers' trials; then this one's
                if TrialState.RUNNING in states:
                    unfinished = unfinished | {i for i in self._owned
                                               if self.trial_location(i)[0] == study_id}
                trials = sorted((t for t in map(self._cached, unfinished) if t.state in states),
                                key=lambda t: t.number)
            else:
                if self._ordered.get(study_id) is None:
                    self._ordered[study_id] = sorted(study.trials.values(), key=lambda t: t.number)
                trials = self._ordered[study_id]
                trials = trials if states is None else [t for t in trials if t.state in states]
            return copy.deepcopy(trials) if deepcopy else list(trials)

    def add_to_cache(self, study_id: int, trials: list) -> None:
        super().add_to_cache(study_id, trials)
        ordered = self._ordered.get(study_id)
        for trial in trials:  # numbers come in order, mostly: replace or append, else sort at the next call
            if ordered is None:
                break
            contiguous = not ordered or ordered[-1].number == len(ordered) - 1  # position = number
            if contiguous and trial.number < len(ordered):
                ordered[trial.number] = trial
            elif contiguous and trial.number == len(ordered):
                ordered.append(trial)
            else:
                self._ordered[study_id] = ordered = None

    def get_trial(self, trial_id: int):
        with self.lock:
            trial = self._owned.get(trial_id)
            if trial is not None:
                return _copy(trial)
        return super().get_trial(trial_id)

    def read_trials(self, study_id: int) -> None:
        """The trials made since the last read, and the unfinished trials (the queue, other drivers') whose
        state changed: one statement when none did. Optuna reads every trial above the last finished one, and
        every unfinished one, whole.

        Trials of a study are made one at a time under a lock on the study's row, so trial ids come, and are
        committed, in order: a read that saw trial N has seen every trial of the study before it."""
        with self.lock:
            study = self.study_cache(study_id)
            seen = self._seen.get(study_id, -1)
            made_here = {i for i in self._created_here if i > seen}
            trials = self._read(study_id, set(study.unfinished_trial_ids), seen, made_here)
            self.add_to_cache(study_id, trials)
            for trial in trials:
                if trial.state.is_finished():
                    study.unfinished_trial_ids.discard(private_apis.trial_id(trial))
                else:
                    study.unfinished_trial_ids.add(private_apis.trial_id(trial))
            self._seen[study_id] = max([seen, *made_here, *(private_apis.trial_id(t) for t in trials)])
            self._created_here.clear()  # all at or below the new mark

    def _changed(self, row, seen: int, skipped: set) -> bool:
        """Whether a trial row read is new (above `seen`, not in `skipped`), or not the cached trial: another
        state, or running with no parameters in the cached copy (another driver writes them just after
        asking)."""
        if (row.trial_id > seen and row.trial_id not in skipped) or not self.is_cached(row.trial_id):
            return True
        cached = self._cached(row.trial_id)
        return cached.state != row.state or (row.state == TrialState.RUNNING and not cached.params)

    @retried
    def _read(self, study_id: int, unfinished: set, seen: int, skipped: set) -> list:
        """The trials of `unfinished` that changed and those above `seen` not in `skipped`, as Optuna builds
        them, read by SQL: the rows of both in one statement, then, where any is new or changed, a statement
        per child table; no ORM object (Optuna's read is far slower: docs/performance.md)."""
        with driver_sql.reading(self.backend) as connection:
            rows = [row for row in driver_sql.trial_rows(connection, study_id, unfinished, seen, skipped)
                    if self._changed(row, seen, skipped)]
            if not rows:
                return []
            changed = {row.trial_id for row in rows} & unfinished
            read = driver_sql.child_rows(connection, study_id, changed, seen, skipped, NOT_CACHED)
        return self._build(rows, read)

    @retried
    def get_study_system_attrs(self, study_id: int) -> dict:
        """Optuna's answer in one statement (Optuna's takes two, and its ORM): the searcher reads the drivers'
        heartbeats here before each ask."""
        with driver_sql.reading(self.backend) as connection:
            return driver_sql.study_system_attrs(connection, study_id)

    def _build(self, rows: list, read: dict) -> list:
        """FrozenTrials from the rows of `_read`, as Optuna's `_build_frozen_trial_from_trial_model`."""
        return driver_sql.build(rows, read, self._decoded, SHARED_ATTRS)

    def _decoded(self, text: str, decode):
        """`decode(text)`, one object for equal texts: a distribution, or an attribute most trials share."""
        if text not in self._shared:
            if len(self._shared) >= SHARED_MAX:
                self._shared.clear()
            self._shared[text] = decode(text)
        return self._shared[text]

    # Writes -----------------------------------------------------------------------------------------

    def create_new_trial(self, study_id: int, template_trial=None) -> int:
        trial = self._create(study_id, template_trial)
        made = private_apis.trial_id(trial)
        with self.lock:
            study = self.study_cache(study_id)
            self.add_to_cache(study_id, [trial])
            self._created_here.add(made)
            if trial.state == TrialState.RUNNING:
                self._owned[made] = trial
            elif not trial.state.is_finished():  # queued: another process may take it
                study.unfinished_trial_ids.add(made)
        return made

    @retried
    def _create(self, study_id: int, template=None):
        """Optuna's trial creation in two statements and no ORM object (Optuna's takes five): the study's row
        locked, then the trial inserted with its number; a template's values, parameters (checked against the
        study's distributions) and attributes written in the same transaction."""
        # lazy: optuna
        from optuna.trial import FrozenTrial

        state = TrialState.RUNNING if template is None else template.state
        start = datetime.datetime.now() if template is None else template.datetime_start
        with driver_sql.writing(self.backend) as connection:
            made, number = driver_sql.create_trial(connection, study_id, state, start,
                                                   None if template is None else template.datetime_complete)
            if template is not None:
                held = _Held()
                held.params = [(name, template.distributions[name].to_internal_repr(value),
                                template.distributions[name]) for name, value in template.params.items()]
                held.user_attrs, held.system_attrs = template.user_attrs, template.system_attrs
                held.intermediate = template.intermediate_values
                driver_sql.check_params(connection, study_id, held.params)
                driver_sql.write_values(connection, made, template.values)
                driver_sql.insert(connection, [(made, held)])
        if template is None:
            return FrozenTrial(number=number, state=state, value=None, values=None, datetime_start=start,
                               datetime_complete=None, params={}, distributions={}, user_attrs={},
                               system_attrs={}, intermediate_values={}, trial_id=made)
        trial = copy.deepcopy(template)
        trial.number, trial.datetime_start = number, start
        private_apis.set_trial_id(trial, made)
        return trial

    def set_trial_param(self, trial_id: int, param_name: str, param_value_internal: float, distribution) -> None:
        with self.lock:
            trial = self._owned.get(trial_id)
            study_id, _ = self.trial_location(trial_id)
            known = self.studies[study_id].param_distribution.get(param_name)
            if trial is None or known is None:  # the first of its name is checked against the study, now
                super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
            else:
                check_distribution_compatibility(known, distribution)
                self._hold(trial_id).params.append((param_name, param_value_internal, distribution))
            if trial is not None:
                trial.params[param_name] = distribution.to_external_repr(param_value_internal)
                trial.distributions[param_name] = distribution
            self._write_if_due()

    def set_trial_user_attr(self, trial_id: int, key: str, value) -> None:
        if not self._held_write(trial_id, "user_attrs", key, value):
            super().set_trial_user_attr(trial_id, key, value)

    def set_trial_system_attr(self, trial_id: int, key: str, value) -> None:
        if not self._held_write(trial_id, "system_attrs", key, value):
            super().set_trial_system_attr(trial_id, key, value)

    def set_trial_intermediate_value(self, trial_id: int, step: int, intermediate_value: float) -> None:
        if not self._held_write(trial_id, "intermediate", step, intermediate_value):
            super().set_trial_intermediate_value(trial_id, step, intermediate_value)

    def _held_write(self, trial_id: int, kind: str, key, value) -> bool:
        """Hold a write to a trial this driver runs and apply it to the cached trial; False for another trial."""
        with self.lock:
            trial = self._owned.get(trial_id)
            if trial is None:
                return False
            if kind == "user_attrs" and key in SHARED_ATTRS:
                value = self._decoded(json.dumps(value), json.loads)
            getattr(self._hold(trial_id), kind)[key] = value
            if kind != "user_attrs" or key not in NOT_CACHED:
                (trial.intermediate_values if kind == "intermediate" else getattr(trial, kind))[key] = value
            self._write_if_due()
            return True

    def set_trial_state_values(self, trial_id: int, state: TrialState, values=None) -> bool:
        with self.lock:
            trial = self._owned.get(trial_id)
            if trial is not None and state.is_finished():
                self._write({trial_id}, final=(trial_id, state, values))
                return True
        if state != TrialState.RUNNING:
            return super().set_trial_state_values(trial_id, state=state, values=values)
        started = self._start(trial_id)
        if started is not None:  # popped from the queue by this driver: its own now
            with self.lock:
                trial = self._cached(trial_id)
                trial.state, trial.datetime_start = TrialState.RUNNING, started
                self._study_of(trial_id).unfinished_trial_ids.discard(trial_id)
                self._owned[trial_id] = trial
        return started is not None

    @retried
    def _start(self, trial_id: int):
        """A queued trial made RUNNING, as Optuna does it: its start time, or None if another process took it
        first (UpdateFinishedTrialError if it is finished). One statement when it is still queued."""
        now = datetime.datetime.now()
        with driver_sql.writing(self.backend) as connection:
            if driver_sql.set_state(connection, trial_id, TrialState.RUNNING, now, (TrialState.WAITING,)):
                return now
            self.backend.check_trial_is_updatable(trial_id, driver_sql.trial_state(connection, trial_id))
            return None

    def flush(self) -> None:
        """Write every held write now, in one transaction."""
        with self.lock:
            self._write(set(self._held))

    def _write_if_due(self) -> None:
        if time.monotonic() - self._last_write >= FLUSH_EVERY_S:
            self._write(set(self._held))

    def _hold(self, trial_id: int) -> _Held:
        return self._held.setdefault(trial_id, _Held())

    def _study_of(self, trial_id: int):
        return self.studies[self.trial_location(trial_id)[0]]

    def _cached(self, trial_id: int):
        study_id, number = self.trial_location(trial_id)
        return self.studies[study_id].trials[number]

    @retried
    def _write(self, trial_ids: set, final=None) -> None:
        """The held writes of `trial_ids`, and `final` (trial id, state, values), in one transaction. Held
        writes are dropped only once committed, so a retry writes them again."""
        self._last_write = time.monotonic()
        trial_ids = {i for i in trial_ids if i in self._held} | ({final[0]} if final else set())
        if not trial_ids:
            return
        now = datetime.datetime.now()
        with driver_sql.writing(self.backend) as connection:
            finished_elsewhere = set()
            if final:  # its state first: the same statement locks its row and says whether it is still running
                if not driver_sql.set_state(connection, final[0], final[1], now, UNFINISHED):
                    finished_elsewhere.add(final[0])
                elif final[2]:
                    driver_sql.write_values(connection, final[0], final[2])
            others = trial_ids - {final[0]} if final else trial_ids
            if others:
                finished_elsewhere |= {i for i, state in driver_sql.lock_states(connection, others).items()
                                       if state.is_finished()}
            writing = [i for i in trial_ids if i not in finished_elsewhere and i in self._held]
            driver_sql.insert(connection, [(i, self._held[i]) for i in writing])
        for trial_id in trial_ids:
            self._held.pop(trial_id, None)
        for trial_id in finished_elsewhere:  # read again at the next read
            log.warning("trial %s was finished by another driver; its writes here are dropped",
                        self._cached(trial_id).number)
            self._owned.pop(trial_id, None)
            self._study_of(trial_id).unfinished_trial_ids.add(trial_id)
        if final and final[0] in finished_elsewhere:
            raise UpdateFinishedTrialError(f"trial {self._cached(final[0]).number} was finished by another driver")
        if final:
            trial_id, state, values = final
            trial = self._owned.pop(trial_id)
            trial.state, trial.datetime_complete = state, now
            trial.values = values

def _copy(trial):
    """A copy of a cached trial whose dictionaries a caller may change without changing the cache."""
    copied = copy.copy(trial)
    for name in ("params", "distributions", "user_attrs", "system_attrs", "intermediate_values"):
        setattr(copied, name, dict(getattr(trial, name)))
    return copied
