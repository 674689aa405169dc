"""A second record of every trial the driver finishes: results/trial-logs/STUDY.jsonl, one JSON object a
line, appended (and flushed to disk) before the trial is written to the study. When the storage is lost
(an SQLite file deleted, a database dropped), `rebuild` restores the study from it.

Lines: {"kind": "study", ...} when a driver opens the study (name, directions, metric names, the study's
user attributes), then {"kind": "trial", ...} per final trial: its state, values, parameters with their
distributions, user attributes and intermediate values as the driver stores them. Orphans, surpluses
and interrupted trials are not logged: a rerun runs them again (a trial logged just before its driver was
killed is logged again by its retry; `rebuild` keeps one per configuration and seed). No storage URL is
written.

A log must be a regular file of at most MAX_LOG_BYTES, lines of at most torn.MAX_LINE bytes; a torn last line
(a full disk, a crash) is set aside beside the log before the next append and before a rebuild
(`torn.set_aside`). Its study name obeys the name rule and its directions are minimize or maximize.
"""
from __future__ import annotations

import datetime
import errno
import fcntl
import json
import os
import stat
import warnings
from pathlib import Path

from sensitivity.core.paths import RESULTS, UnsafeName, check_name, check_output, under
from sensitivity.studies import storage_health, torn
from sensitivity.studies.redaction import describe
from sensitivity.studies.storage import check_url, default_url, open_storage
from sensitivity.studies.trial_rows import has_trials

MAX_LOG_BYTES = 2**30  # 1 GiB: a million trials of about 1 KiB each
OPENING = b'{"kind": '  # how each line starts (json.dumps)
DIRECTIONS = ("MINIMIZE", "MAXIMIZE")

LOGS = RESULTS / "trial-logs"


class LogError(Exception):
    """A trial log that cannot be read or rebuilt from; one line."""


def log_path(study_name: str) -> Path:
    return under(LOGS, study_name, ".jsonl")


def check_log(study_name: str) -> Path:
    """Before anything is written: the study's trial log is absent or a regular file (a FIFO would block the
    first append forever, a device or a folder fail it); ValueError naming it otherwise."""
    path = LOGS / (check_name(study_name) + ".jsonl")
    hint = "a sweep appends each finished trial there; remove it, or name another --study"
    try:
        check_output(path, "trial log")
        return log_path(study_name)  # UnsafeName: a link that leads out of LOGS
    except UnsafeName:
        raise ValueError(f"trial log {str(path)!r}: a link to {os.readlink(path)!r}, out of {LOGS}: {hint}") from None
    except ValueError as exc:
        raise ValueError(f"{exc}: {hint}") from None


def _open_for_append(path: Path) -> int:
    """A descriptor appending to the regular file `path` (created if absent). Opened without blocking and
    checked with fstat: a FIFO put there during a run is a LogError at once, not a write that waits forever."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO no one reads
            raise LogError(f"trial log {path}: a FIFO, not a regular file") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LogError(f"trial log {path}: not a regular file")
    os.set_blocking(fd, True)
    return fd


def _append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, default=str, allow_nan=True) + "\n"
    # one write per line: O_APPEND keeps drivers' lines whole
    with os.fdopen(_open_for_append(path), "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # drivers of one study: a line being written is never taken for torn
        try:
            torn.set_aside(path, f"trial log {path}", OPENING)  # a full disk's torn line: the next starts anew
        except torn.RecordFileError as exc:
            raise LogError(str(exc)) from None
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def log_study(study) -> Path:
    """Append the study's line; returns the log's path."""
    path = log_path(study.study_name)
    _append(path, {"kind": "study", "study": study.study_name, "directions": [d.name for d in study.directions],
                   "metric_names": study.metric_names, "user_attrs": study.user_attrs,
                   "time": datetime.datetime.now().isoformat()})
    return path


def log_trial(path: Path, trial, state, values, intermediate: dict, attrs: dict) -> None:
    """Append a final trial (an optuna.Trial the driver asked, with `attrs` about to be written), before it
    is written to the study. A log that cannot be written (results/ full: ENOSPC; a FIFO put there) is a fault
    of the results folder, not of the trial or the study: the trial is still told to the study, the sweep takes
    no new trial (`storage_health.mark_lost` stops Tune; trials still running are left to the orphan rule), and
    the driver ends with one line (`storage_health.write_fault`), exit 1."""
    # lazy: optuna
    from optuna.distributions import distribution_to_json

    attrs = {**trial.user_attrs, **attrs}
    try:
        _append(path, {"kind": "trial", "key": f"{attrs.get('driver')}:{trial.number}", "number": trial.number,
                       "state": state.name, "values": values, "params": trial.params,
                       "distributions": {k: distribution_to_json(d) for k, d in trial.distributions.items()},
                       "user_attrs": attrs, "intermediate_values": {str(k): v for k, v in intermediate.items()},
                       "datetime_start": trial.datetime_start, "datetime_complete": datetime.datetime.now()})
    except (OSError, LogError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        storage_health.mark_write_fault(f"trial log {path} cannot be written ({why}; trial {trial.number} and those "
                                        "after it are in the study only)")


def read(path) -> tuple:
    """(the last study line, the trial lines with one per key, the last kept), or LogError. A torn last line
    is skipped (`rebuild` sets it aside)."""
    path = Path(path)
    what = f"trial log {path}"
    study, trials = None, {}
    try:
        fd = torn.open_regular(path, what, MAX_LOG_BYTES)
        try:
            for number, line in torn.lines(fd, what):
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    break  # a last line cut by a crash
                try:
                    record = json.loads(line)
                    kind = record["kind"]
                except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: nested too deep
                    raise LogError(f"{what}: line {number} is not a trial-log record") from None
                if kind == "study":
                    line_study = _checked_study(record, what, number)
                    if study is not None and (line_study["study"], line_study["directions"]) != \
                            (study["study"], study["directions"]):  # every driver's run adds the same line
                        raise LogError(f"{what}: line {number} is the study line of {line_study['study']!r} "
                                       f"({', '.join(line_study['directions']).lower()}), an earlier one of "
                                       f"{study['study']!r} ({', '.join(study['directions']).lower()}): a log holds "
                                       "one study")
                    study = line_study
                elif kind == "trial" and isinstance(record.get("key"), str):
                    trials[record["key"]] = record
                else:
                    raise LogError(f"{what}: line {number} is not a trial-log record (kind {kind!r}, or no key)")
        finally:
            os.close(fd)
    except torn.RecordFileError as exc:
        raise LogError(str(exc)) from None
    if study is None:
        raise LogError(f"{what}: no study line; not a sensitivity trial log")
    return study, list(trials.values())


def _checked_study(record: dict, what: str, number: int) -> dict:
    """A study line whose name obeys the name rule, with directions minimize or maximize (any case) and
    user attributes and metric names of the right types."""
    where = f"{what}: line {number}"
    if not isinstance(record.get("study"), str):
        raise LogError(f"{where}: the study line has no study name")
    try:
        check_name(record["study"], "study name")
    except UnsafeName as exc:
        raise LogError(f"{where}: {exc}") from None
    directions = record.get("directions")
    if not isinstance(directions, list) or not directions or \
            not all(isinstance(d, str) and d.upper() in DIRECTIONS for d in directions):
        shown = repr(directions) if len(repr(directions)) <= 60 else "of another form"
        raise LogError(f"{where}: directions {shown}: allowed a list of {' or '.join(DIRECTIONS).lower()}")
    names = record.get("metric_names")
    if names is not None and (not isinstance(names, list) or len(names) != len(directions)
                              or not all(isinstance(n, str) for n in names)):
        raise LogError(f"{where}: metric_names must be null or a list of {len(directions)} names")
    if not isinstance(record.get("user_attrs", {}), dict):
        raise LogError(f"{where}: user_attrs must be an object")
    return {**record, "directions": [d.upper() for d in directions], "user_attrs": record.get("user_attrs", {})}


def _one_per_run(records: list) -> list:
    """One record per configuration and seed, the last logged, in the order they finished. A driver killed
    after logging a trial and before writing it leaves an orphan whose retry is logged again: the study
    kept the retry."""
    runs = {}
    for r in sorted(records, key=lambda r: r["datetime_complete"]):
        attrs = r["user_attrs"]
        key = (attrs["config_id"], attrs["seed"]) if "config_id" in attrs and "seed" in attrs else r["key"]
        runs.pop(key, None)
        runs[key] = r
    return list(runs.values())


def rebuild(path, storage_url, study_name=None) -> tuple:
    """Create the study of the log in `storage_url` with every logged trial; (study name, trials added).
    The study must not exist there with trials already (rebuild into a new storage, or name another)."""
    # lazy: optuna
    import optuna
    from optuna.distributions import json_to_distribution
    from optuna.trial import TrialState, create_trial

    header, records = read(path)  # the log checked whole, and its trials made, before anything is written
    name = study_name or header["study"]
    trials = []
    try:
        runs = _one_per_run(records)
    except (KeyError, TypeError, AttributeError):
        raise LogError(f"trial log {path}: a trial line lacks its user_attrs or datetime_complete") from None
    for r in runs:
        values = r.get("values")
        if r.get("state") == "COMPLETE" and (not isinstance(values, list) or len(values) != len(header["directions"])):
            raise LogError(f"trial log {path}: trial {r.get('number')}: values {values!r:.60} do not match the study's "
                           f"{len(header['directions'])} directions")
        try:
            trials.append(create_trial(
                state=TrialState[r["state"]], values=r["values"], params=r["params"],
                distributions={k: json_to_distribution(d) for k, d in r["distributions"].items()},
                user_attrs={**r["user_attrs"], "rebuilt_from": {"number": r["number"], "log": str(path)}},
                intermediate_values={int(k): v for k, v in r["intermediate_values"].items()}))
        except (KeyError, ValueError, TypeError, AttributeError) as exc:
            raise LogError(f"trial log {path}: trial {r.get('number')} cannot be restored: {exc}") from None
    check_url(storage_url or default_url())
    try:
        torn.set_aside(path, f"trial log {path}", OPENING)
    except torn.RecordFileError as exc:
        raise LogError(str(exc)) from None
    storage = open_storage(storage_url)
    try:
        existing = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        existing = None
    if existing is not None and has_trials(existing):
        raise LogError(f"study {name} already has trials in {describe(storage_url or '')}; rebuild into a new "
                       "storage, or give another --study")
    study = existing or optuna.create_study(study_name=name, storage=storage,
                                            directions=[d.lower() for d in header["directions"]])
    for key, value in header["user_attrs"].items():
        study.set_user_attr(key, value)
    if header.get("metric_names"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(header["metric_names"])
    study.add_trials(trials)
    return name, len(trials)
