"""How trials are written in the study: the attribute names, and the counts a sweep is measured by.

Each Optuna trial is one run of one configuration with one seed. Its user attributes hold the
TrialSpec it ran (`spec`), the TrialResult's fields (`status`, `reason`, `accuracy`, ..., `curve`, `env`), the `seed`, the `config_id`
shared by the seeds of one configuration, the `driver` that owns it, and, for a retry, `retry_of` (the
number of the orphan it replaces) and `attempt` (2 or more; a configuration gets recovery.MAX_ATTEMPTS).
An orphan is a RUNNING trial whose driver stopped beating: it is marked FAIL with `orphaned` set, and its
parameters are queued again; so is a trial still running when its driver's run ended (time budget, Ctrl-C),
with `interrupted` set as well, and one whose Ray node was lost. When drivers sharing a study ask
at the same moment, the trials beyond the N-th (by number) are told FAIL with `surplus` set before they
run, and their queued parameters go back in the queue: neither kind counts towards N.
"""
from __future__ import annotations

import socket
import time
from dataclasses import fields

import psutil

from sensitivity import private_apis

HEARTBEAT_PREFIX = "heartbeat:"
# what a queued trial carries, and a retry or a re-queued surplus keeps
QUEUED_ATTRS = ("seed", "config_id", "retry_of", "attempt", "planned", "plan_key", "is_default", "default",
                "default_source", "source_dataset", "own_default", "default_kind", "budget", "budget_scale", "samples_scale", "published_epochs",
                "run_epochs", "crossover", "tuned_for", "placebo", "tuned_config", "tuned_key", "timing", "timed_study",
                "timed_trial")
SPACE_HASH = "space_fingerprint"
SAMPLERS_ATTR = "samplers"  # every sampler the sweeps of a study ran with, in order (the analysis reads it)


def result_fields() -> tuple:
    """The TrialResult fields a finished trial records, each as a user attribute of its name (`spec`: as it
    ran). A function: TrialResult's module imports pydantic, which the analysis does not need."""

    from sensitivity.core.spec import TrialResult  # lazy: pydantic, which the analysis does not need
    return tuple(f.name for f in fields(TrialResult))


# A spec recorded before TrialSpec had `semantics` ran the canonical formulas with the init it names.
REGIME_BEFORE_SEMANTICS = {"semantics": "canonical"}


FINAL_STATES = ("COMPLETE", "PRUNED", "FAIL")  # the names of the TrialStates a trial ends in


def is_final(trial) -> bool:
    """COMPLETE, PRUNED, or FAIL that is neither an orphan nor a surplus: a trial that counts towards N.
    `trial`: Optuna's FrozenTrial, or a `trial_rows.TrialRecord` (whose state is the name)."""
    attrs = trial.user_attrs
    return (getattr(trial.state, "name", trial.state) in FINAL_STATES and not attrs.get("orphaned")
            and not attrs.get("surplus"))


def counts_towards_target(trial) -> bool:
    """Final, or running (a running trial will become final)."""
    # lazy: optuna
    from optuna.trial import TrialState
    attrs = trial.user_attrs
    return is_final(trial) or (trial.state == TrialState.RUNNING and not attrs.get("orphaned")
                               and not attrs.get("surplus"))


def count_final(study) -> int:
    return sum(is_final(t) for t in study.get_trials(deepcopy=False))


def heartbeats(study) -> dict:
    """{driver id: {"time": last beat (unix seconds), "host", "pid", "created"}}."""
    attrs = private_apis.study_storage(study).get_study_system_attrs(private_apis.study_id(study))
    return {k[len(HEARTBEAT_PREFIX):]: v for k, v in attrs.items() if k.startswith(HEARTBEAT_PREFIX)}


def beat(study, driver_id: str) -> None:
    me = psutil.Process()
    storage = private_apis.study_storage(study)
    storage.set_study_system_attr(private_apis.study_id(study), HEARTBEAT_PREFIX + driver_id, {
        "time": time.time(), "host": socket.gethostname(), "pid": me.pid, "created": me.create_time()})


def driver_alive(beat_record: dict, stale_after: float) -> bool:
    """A driver is alive while it beats; on this host, a driver whose process is gone is dead at once."""
    if time.time() - beat_record["time"] >= stale_after:
        return False
    if beat_record.get("host") != socket.gethostname():
        return True
    try:
        return abs(psutil.Process(beat_record["pid"]).create_time() - beat_record["created"]) < 0.01
    except psutil.NoSuchProcess:
        return False
