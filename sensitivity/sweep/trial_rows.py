"""A study's trials as plain records, read in bulk for the analysis and the export.

Optuna's `get_trials` builds a FrozenTrial per trial, with every attribute, through its ORM: about 2 ms a
trial here, so minutes for a study of 100,000. On an RDB storage (SQLite, PostgreSQL) `trial_records` reads
instead one query per table of Optuna's schema, and only the user attributes asked for (a trial's
`stderr_tail`, for one, is never read by the analysis). Other storages (a journal, memory) go through
Optuna. Both give the same records (tests/sweep/test_fast_table.py).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional


@dataclass
class TrialRecord:
    number: int
    state: str  # Optuna's TrialState name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    duration_s: Optional[float]
    values: Optional[list]
    params: dict  # name -> value as the sampler suggested it
    distributions: dict  # name -> Optuna's distribution JSON
    user_attrs: dict


def trial_records(study, keys=None) -> list:
    """The trials of `study` by number; `keys` limits the user attributes read (None: all of them)."""
    backend = getattr(study._storage, "_backend", study._storage)  # RDB storages come wrapped in a cache
    from optuna.storages import RDBStorage
    if isinstance(backend, RDBStorage):
        return _from_rdb(backend.engine, study._study_id, None if keys is None else tuple(keys))
    return [_from_frozen(t, keys) for t in study.get_trials(deepcopy=False)]


def _from_frozen(trial, keys) -> TrialRecord:
    from optuna.distributions import distribution_to_json

    attrs = trial.user_attrs if keys is None else {k: v for k, v in trial.user_attrs.items() if k in keys}
    return TrialRecord(trial.number, trial.state.name, trial.duration.total_seconds() if trial.duration else None,
                       list(trial.values) if trial.values is not None else None, dict(trial.params),
                       {k: distribution_to_json(d) for k, d in trial.distributions.items()}, dict(attrs))


def _from_rdb(engine, study_id: int, keys) -> list:
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    trials, params = models.TrialModel.__table__, models.TrialParamModel.__table__
    values, attrs = models.TrialValueModel.__table__, models.TrialUserAttributeModel.__table__
    mine = trials.c.study_id == study_id
    with engine.connect() as connection:
        rows = connection.execute(sa.select(trials.c.trial_id, trials.c.number, trials.c.state,
                                            trials.c.datetime_start, trials.c.datetime_complete)
                                  .where(mine).order_by(trials.c.number)).all()
        records, by_id = [], {}
        for trial_id, number, state, start, complete in rows:
            duration = (complete - start).total_seconds() if start is not None and complete is not None else None
            by_id[trial_id] = TrialRecord(number, state.name, duration, None, {}, {}, {})
            records.append(by_id[trial_id])
        joined = sa.join(params, trials, params.c.trial_id == trials.c.trial_id)
        distributions = _Distributions()
        for trial_id, name, internal, text in connection.execute(
                sa.select(params.c.trial_id, params.c.param_name, params.c.param_value, params.c.distribution_json)
                .select_from(joined).where(mine).order_by(params.c.param_id)):
            record = by_id[trial_id]
            record.params[name], record.distributions[name] = distributions.external(text, internal)
        joined = sa.join(values, trials, values.c.trial_id == trials.c.trial_id)
        for trial_id, objective, value, kind in connection.execute(
                sa.select(values.c.trial_id, values.c.objective, values.c.value, values.c.value_type)
                .select_from(joined).where(mine).order_by(values.c.trial_id, values.c.objective)):
            record = by_id[trial_id]
            record.values = (record.values or []) + [_value(value, kind.name)]
        joined = sa.join(attrs, trials, attrs.c.trial_id == trials.c.trial_id)
        query = sa.select(attrs.c.trial_id, attrs.c.key, attrs.c.value_json).select_from(joined).where(mine)
        if keys is not None:
            query = query.where(attrs.c.key.in_(keys))
        loads = json.loads
        for trial_id, key, text in connection.execute(query.order_by(attrs.c.trial_user_attribute_id)):
            by_id[trial_id].user_attrs[key] = loads(text)
    return records


def _value(value, kind: str) -> float:
    return {"INF_POS": float("inf"), "INF_NEG": float("-inf")}.get(kind, value)


class _Distributions:
    """Each distinct distribution JSON parsed once: a study of 100,000 trials holds a handful."""

    def __init__(self):
        self.known = {}

    def external(self, text: str, internal: float) -> tuple:
        """(the parameter's value as suggested, the distribution's JSON as Optuna writes it)."""
        from optuna.distributions import distribution_to_json, json_to_distribution

        if text not in self.known:
            dist = json_to_distribution(text)
            self.known[text] = (dist, distribution_to_json(dist))
        dist, normal = self.known[text]
        return dist.to_external_repr(internal), normal


CACHE_FORMAT = 2  # raise when what is cached changes shape (2: the normalised trial table)


def cache_dir():
    """Where trial frames are cached: trials/ under the cache root of `sensitivity.datasets.cache`
    ($SENSITIVITY_CACHE_DIR, else ~/.cache/sensitivity); None when SENSITIVITY_TRIAL_CACHE is `off`."""
    import os

    from sensitivity.datasets.cache import cache_root
    return None if os.environ.get("SENSITIVITY_TRIAL_CACHE") == "off" else cache_root() / "trials"


def cached_frame(study, build, depends_on=()):
    """`build(study)`, a DataFrame of the study's trials, or the copy cached by an earlier call while the study
    is unchanged since (RDB storages only). Unchanged means the same trials, states, completion times and
    user attributes (their count, last id and total length): a driver's every write changes one of them;
    and the same `depends_on` (JSON-able: what else `build` reads of the study)."""
    import hashlib
    import pickle
    import uuid

    import pandas as pd

    backend = getattr(study._storage, "_backend", study._storage)
    folder = cache_dir()
    from optuna.storages import RDBStorage
    if folder is None or not isinstance(backend, RDBStorage):
        return build(study)
    key = _state_key(backend.engine, study._study_id) + [json.dumps(depends_on, sort_keys=True, default=str)]
    place = hashlib.sha256(f"{backend.url}|{study._study_id}|{study.study_name}".encode()).hexdigest()[:24]
    path = folder / f"{place}.pkl"
    try:
        cached = pd.read_pickle(path)
        if cached.attrs.get("cache_key") == key:
            cached.attrs.pop("cache_key")
            return cached
    except (OSError, ValueError, EOFError, AttributeError, ImportError, pickle.UnpicklingError):
        pass  # no copy yet, or one this code cannot read
    frame = build(study)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        frame.attrs["cache_key"] = key
        frame.to_pickle(partial)
        partial.replace(path)  # whole or not at all, also with readers beside
    except OSError:
        pass  # a read-only home: uncached
    finally:
        frame.attrs.pop("cache_key", None)
    return frame


def _state_key(engine, study_id: int) -> list:
    """What changes whenever a trial of the study is added, changes state, finishes or gets an attribute."""
    import sqlalchemy as sa

    with engine.connect() as connection:
        trials = connection.execute(sa.text(
            "SELECT state, count(*), max(trial_id), max(datetime_complete) FROM trials WHERE study_id = :s "
            "GROUP BY state ORDER BY state"), {"s": study_id}).all()
        attrs = connection.execute(sa.text(
            "SELECT count(*), max(a.trial_user_attribute_id), sum(length(a.value_json)) FROM trial_user_attributes a "
            "JOIN trials t ON a.trial_id = t.trial_id WHERE t.study_id = :s"), {"s": study_id}).one()
    return [CACHE_FORMAT, [[str(v) for v in row] for row in trials], [str(v) for v in attrs]]
