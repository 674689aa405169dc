"""Resume: after a driver was killed, its RUNNING trials become orphans and their parameters go back in
the queue, exactly once per orphan and at most MAX_ATTEMPTS times per configuration in all (each retry
records its `attempt`); the study is then continued to N final trials.

Idempotent: running it twice changes nothing the second time. A RUNNING trial is an orphan only when the
driver that owns it has stopped: its process is gone (same host) or it has not beaten for `stale_after`
seconds (another host), so drivers sharing a study (PostgreSQL) never fail each other's live trials.
"""
from __future__ import annotations

import datetime
from typing import NamedTuple

from sensitivity import private_apis
from sensitivity.studies.records import QUEUED_ATTRS, driver_alive, heartbeats

STALE_AFTER_S = 60.0
MAX_ATTEMPTS = 3  # a configuration runs at most this many times in all, however often it is orphaned


def configuration(trial) -> dict | None:
    """The parameters a stopped trial ran with: those it suggested, else those it was queued with (a
    trial stopped between `ask` and its first suggestion); None when it stopped before drawing any."""
    if trial.params:
        return trial.params
    return trial.system_attrs.get("fixed_params")


def orphan_attrs(trial, why: str, ran: bool = True) -> dict:
    """The user attributes that make a stopped trial an orphan, queued again as attempt k+1 of its
    configuration (`attempt`, 1 when absent); the MAX_ATTEMPTS-th is not queued again but stays a final
    FAIL that says so (it counts towards N). A trial that never ran (`ran` False: `not_run`) is queued again
    as the same attempt. An orphan that drew no configuration has none to retry: it is not queued, and the
    study's next trial takes its place."""
    attempt = trial.user_attrs.get("attempt", 1)
    if not ran:
        return {"orphaned": True, "not_run": True, "status": "failed", "reason": why}
    if attempt >= MAX_ATTEMPTS:
        return {"orphaned": False, "retries_exhausted": True, "status": "failed",
                "reason": f"{why}; attempt {attempt} of at most {MAX_ATTEMPTS}: not retried again"}
    if configuration(trial) is None:
        why += "; it had drawn no configuration, so none is retried"
    return {"orphaned": True, "status": "failed", "reason": why}


class Recovered(NamedTuple):
    orphaned: list  # the numbers of the trials this call failed as orphans
    queued: list  # the numbers of the orphans whose configuration it queued again (earlier ones' included)


def recover(study, my_driver: str, stale_after: float = STALE_AFTER_S) -> Recovered:
    """Mark orphans FAIL and queue each orphan's configuration once."""
    # lazy: optuna
    from optuna.trial import TrialState

    beats = heartbeats(study)
    others_alive = any(driver_alive(b, stale_after) for d, b in beats.items() if d != my_driver)
    orphaned = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        owner = trial.user_attrs.get("driver")
        if owner == my_driver:
            continue
        if owner in beats and driver_alive(beats[owner], stale_after):
            continue  # a live driver's trial
        if owner is None and others_alive and _age_s(trial) < stale_after:
            continue  # asked a moment ago by a live driver that has not yet written itself as the owner
        why = (f"driver {owner} stopped while the trial ran" if owner is not None else
               "its driver stopped between asking for the trial and recording itself as the owner")
        storage, orphan = private_apis.study_storage(study), private_apis.trial_id(trial)
        for name, value in orphan_attrs(trial, f"orphaned: {why}").items():
            storage.set_trial_user_attr(orphan, name, value)
        storage.set_trial_state_values(orphan, TrialState.FAIL)
        orphaned.append(trial.number)
    return Recovered(orphaned, requeue_orphans(study))


def _age_s(trial) -> float:
    return (datetime.datetime.now() - trial.datetime_start).total_seconds() if trial.datetime_start else 0.0


def requeue_orphans(study) -> list:
    """Queue the configuration of every orphan that drew one and that no trial retries yet, as the next
    attempt; returns those orphans' numbers."""
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials if not t.user_attrs.get("surplus")}
    queued = []
    for trial in trials:
        if not trial.user_attrs.get("orphaned") or trial.number in retried:
            continue
        params = configuration(trial)
        if params is not None:
            attrs = {k: trial.user_attrs[k] for k in QUEUED_ATTRS if k in trial.user_attrs}
            attempt = trial.user_attrs.get("attempt", 1) + (not trial.user_attrs.get("not_run"))
            study.enqueue_trial(params, user_attrs={**attrs, "retry_of": trial.number, "attempt": attempt})
            queued.append(trial.number)
    return queued
