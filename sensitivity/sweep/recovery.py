"""Resume: after a driver was killed, its RUNNING trials become orphans and their parameters go back in
the queue, exactly once; the study is then continued to N final trials.

Idempotent: running it twice changes nothing the second time. A RUNNING trial is an orphan only when the
driver that owns it has stopped: its process is gone (same host) or it has not beaten for `stale_after`
seconds (another host), so drivers sharing a study (PostgreSQL) never fail each other's live trials.
"""
from __future__ import annotations

from sensitivity.sweep.records import QUEUED_ATTRS, driver_alive, heartbeats

STALE_AFTER_S = 60.0


def recover(study, my_driver: str, stale_after: float = STALE_AFTER_S) -> list:
    """Mark orphans FAIL and queue each orphan's parameters once; returns the orphans' numbers."""
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
        storage = study._storage
        storage.set_trial_user_attr(trial._trial_id, "orphaned", True)
        storage.set_trial_user_attr(trial._trial_id, "status", "failed")
        storage.set_trial_user_attr(trial._trial_id, "reason", f"orphaned: {why}")
        storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
        orphaned.append(trial.number)
    requeue_orphans(study)
    return orphaned


def _age_s(trial) -> float:
    import datetime
    return (datetime.datetime.now() - trial.datetime_start).total_seconds() if trial.datetime_start else 0.0


def requeue_orphans(study) -> None:
    """Queue the parameters of every orphan that no trial retries yet."""
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials if not t.user_attrs.get("surplus")}
    for trial in trials:
        if trial.user_attrs.get("orphaned") and trial.number not in retried:
            attrs = {k: trial.user_attrs[k] for k in QUEUED_ATTRS if k in trial.user_attrs}
            study.enqueue_trial(trial.params, user_attrs={**attrs, "retry_of": trial.number})
