"""A study's trials as plain records, read in bulk for the analysis and the export.

Optuna's `get_trials` builds a FrozenTrial per trial, with every attribute, through its ORM: minutes for a
study of 100,000 (docs/performance.md). On an RDB storage (SQLite, PostgreSQL) `trial_records` reads
instead one query per table of Optuna's schema, and only the user attributes asked for (a trial's
`stderr_tail`, for one, is never read by the analysis), their JSON parsed in one call per batch (a call per
value costs more than the parsing). Attributes asked for as `texts` stay the JSON text Optuna stored (a
curve: the export writes it as it is, and the trial table parses all curves at once). Other storages (a
journal, memory) go through Optuna. Both give the same records (tests/sweep/test_fast_table.py).
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import weakref
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Optional

from sensitivity import private_apis
from sensitivity.core.paths import atomic_write, cache_root


@dataclass
class TrialRecord:
    number: int
    state: str  # Optuna's TrialState name: COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    duration_s: Optional[float]
    values: Optional[list]
    params: dict  # name -> value as the sampler suggested it
    distributions: dict  # name -> Optuna's distribution JSON
    user_attrs: dict
    started: Optional[datetime] = None  # when the trial started (Optuna's datetime_start)
    system_keys: tuple = ()  # the keys of its system attributes (a sampler's traces), where asked for


def trial_records(study, keys=None, texts=(), system_keys: bool = False) -> list:
    """The trials of `study` by number; `keys` limits the user attributes read (None: all of them); those
    named in `texts` are given as their JSON text; `system_keys`: with the keys of each trial's system
    attributes (their values are not read)."""
    rdb = private_apis.rdb_storage(study)
    if rdb is not None:
        return _from_rdb(rdb.engine, private_apis.study_id(study), None if keys is None else tuple(keys), tuple(texts),
                         system_keys)
    return [_from_frozen(t, keys, texts, system_keys) for t in study.get_trials(deepcopy=False)]


def has_trials(study) -> bool:
    """Whether `study` holds a trial, from at most one row (Optuna's `get_trials` builds every trial first: 10 s
    for 10,000)."""
    rdb = private_apis.rdb_storage(study)
    if rdb is None:
        return bool(study.get_trials(deepcopy=False))
    # lazy: sqlalchemy
    import sqlalchemy as sa

    trials = private_apis.rdb_models().TrialModel.__table__
    with rdb.engine.connect() as connection:
        return connection.execute(sa.select(trials.c.trial_id).where(
            trials.c.study_id == private_apis.study_id(study)).limit(1)).first() is not None


def _from_frozen(trial, keys, texts=(), system_keys: bool = False) -> TrialRecord:
    # lazy: optuna
    from optuna.distributions import distribution_to_json

    attrs = {k: json.dumps(v) if k in texts else v for k, v in trial.user_attrs.items() if keys is None or k in keys}
    return TrialRecord(trial.number, trial.state.name, trial.duration.total_seconds() if trial.duration else None,
                       list(trial.values) if trial.values is not None else None, dict(trial.params),
                       {k: distribution_to_json(d) for k, d in trial.distributions.items()}, attrs,
                       trial.datetime_start, tuple(trial.system_attrs) if system_keys else ())


def _from_rdb(engine, study_id: int, keys, texts=(), system_keys: bool = False) -> list:
    # lazy: sqlalchemy
    import sqlalchemy as sa

    models = private_apis.rdb_models()
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
            by_id[trial_id] = TrialRecord(number, state.name, duration, None, {}, {}, {}, start)
            records.append(by_id[trial_id])
        if not records:
            return records
        # Every read of the trials' rows also names the span of their ids: PostgreSQL then reads them through the
        # index on trial_id, not the table of every study in a hash join (faster where other studies share the
        # storage: docs/performance.md). Where studies were written at once, it holds others' rows too.
        low, high = min(by_id), max(by_id)
        joined = sa.join(params, trials, params.c.trial_id == trials.c.trial_id)
        distributions = {}  # each distinct distribution JSON parsed once: a study of 100,000 trials holds a handful
        for trial_id, name, internal, text in _driver_rows(connection, sa.select(
                params.c.trial_id, params.c.param_name, params.c.param_value, params.c.distribution_json)
                .select_from(joined).where(mine & params.c.trial_id.between(low, high)).order_by(params.c.param_id)):
            dist, normal = distributions.get(text) or distributions.setdefault(text, _distribution(text))
            record = by_id[trial_id]
            record.params[name], record.distributions[name] = dist.to_external_repr(internal), normal
        joined = sa.join(values, trials, values.c.trial_id == trials.c.trial_id)
        for trial_id, objective, value, kind in connection.execute(
                sa.select(values.c.trial_id, values.c.objective, values.c.value, values.c.value_type)
                .select_from(joined).where(mine & values.c.trial_id.between(low, high))
                .order_by(values.c.trial_id, values.c.objective)):
            record = by_id[trial_id]
            record.values = (record.values or []) + [_value(value, kind.name)]
        joined = sa.join(attrs, trials, attrs.c.trial_id == trials.c.trial_id)
        query = (sa.select(attrs.c.trial_id, attrs.c.key, attrs.c.value_json).select_from(joined)
                 .where(mine & attrs.c.trial_id.between(low, high)))
        if keys is not None:
            query = query.where(attrs.c.key.in_(keys))
        rows = _driver_rows(connection, query)  # unordered: one row per trial and key; a sort costs half the read
        if system_keys:
            system = models.TrialSystemAttributeModel.__table__
            for trial_id, key in _driver_rows(connection, sa.select(system.c.trial_id, system.c.key).select_from(
                    sa.join(system, trials, system.c.trial_id == trials.c.trial_id))
                    .where(mine & system.c.trial_id.between(low, high)).order_by(system.c.trial_system_attribute_id)):
                by_id[trial_id].system_keys += (key,)
    parsed = []  # the rows whose JSON is parsed below; the others are kept as text
    for row in rows:
        if row[1] in texts:
            by_id[row[0]].user_attrs[row[1]] = row[2]
        else:
            parsed.append(row)
    for start in range(0, len(parsed), BATCH):
        batch = parsed[start:start + BATCH]
        for (trial_id, key, _), value in zip(batch, parse_json(f"[{','.join([row[2] for row in batch])}]")):
            by_id[trial_id].user_attrs[key] = value
    return records


BATCH = 100_000  # user attribute values parsed per call


def parse_json(text: str):
    """JSON `text` parsed by orjson (2.5 times json's speed on curves, 1.2 on records), or by json where orjson
    refuses it: json writes, and reads, NaN, Infinity and integers past 64 bits, which orjson does not."""
    # lazy: orjson
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _value(value, kind: str) -> float:
    return {"INF_POS": float("inf"), "INF_NEG": float("-inf")}.get(kind, value)


def _driver_rows(connection, query) -> list:
    """The rows of `query` as tuples from the database driver, without SQLAlchemy's Row objects and result
    processing (seconds for millions of rows): only for columns of numbers and text, which need none."""
    return connection.execute(query).cursor.fetchall()


def _distribution(text: str) -> tuple:
    """(the distribution, its JSON as Optuna writes it)."""
    # lazy: optuna
    from optuna.distributions import distribution_to_json, json_to_distribution

    dist = json_to_distribution(text)
    return dist, distribution_to_json(dist)


CACHE_FORMAT = 5  # raise when what is cached changes shape (5: no trial attribute in the key)
CODE = ("analysis", "studies")  # what builds them, in the package: a change there serves no stale copy


def cache_dir():
    """Where trial frames are cached: trials/ under the cache root (`sensitivity.core.paths.cache_root`); None
    when SENSITIVITY_TRIAL_CACHE is `off`."""

    return None if os.environ.get("SENSITIVITY_TRIAL_CACHE") == "off" else cache_root() / "trials"


_BESIDE: dict = {}  # id(frame) -> (weak reference to it, its cache file, its key): for `cached_beside`


def cached_frame(study, build):
    """`build(study)`, a DataFrame of the study's trials (and attrs made from the study), or the copy cached by
    an earlier call while the study and the code (`code_version`) are unchanged (RDB storages only).
    Unchanged means the same trials, states and completion times (the table holds finished trials, which never
    change: `_state_key`), and the same study attributes and directions."""

    place = _cache_place(study)
    if place is None:
        return build(study)
    path, key = place
    frame = _cached(path, key, lambda: build(study))
    _BESIDE[id(frame)] = (weakref.ref(frame, lambda _, i=id(frame): _BESIDE.pop(i, None)), path, key)
    return frame


def read_beside(study, name: str) -> tuple:
    """(True, the result an earlier process cached beside the study's table under NAME, `cached_beside`) while the
    study and the code are unchanged, else (False, None): found by the study's state alone, without reading its
    trials or unpickling its table (`sensitivity findings` after a report)."""
    place = _cache_place(study)
    if place is None:
        return False, None
    path, key = place
    return _read(_beside_path(path, name), key + [name])


def _cache_place(study):
    """(the cache file of the study's table, the key of the study's state and the code), or None where nothing is
    cached (the cache off, or a storage that is not an RDB)."""
    rdb = private_apis.rdb_storage(study)
    folder = cache_dir()
    mark = _MARKS.get(rdb.engine.dialect.paramstyle) if rdb is not None else None
    if folder is None or mark is None:
        return None
    connection = rdb.engine.raw_connection()
    try:
        key = _state_key(connection, mark, private_apis.study_id(study)) + [code_version()]
    finally:
        connection.close()
    return _place(folder, rdb.url, private_apis.study_id(study), study.study_name), key


def cached_beside(frame, name: str, compute):
    """`compute()`, a result derived from `frame` (of `cached_frame`) alone, or the copy an earlier process
    cached beside the frame's own (file NAME beside it) while the study and the code are unchanged: a report
    computes the findings, and `sensitivity findings` after it reads them. `compute()` for other frames."""
    entry = _BESIDE.get(id(frame))
    if entry is None or entry[0]() is not frame:
        return compute()
    _, path, key = entry
    return _cached(_beside_path(path, name), key + [name], compute)


def _place(folder, url: str, study_id: int, study_name: str):
    """The cache file of a study's frame: named by a digest of its storage URL, id and name."""

    return folder / f"{hashlib.sha256(f'{url}|{study_id}|{study_name}'.encode()).hexdigest()[:24]}.pkl"


def _beside_path(path, name: str):
    return path.with_name(f"{path.stem}-{name}.pkl")


def _cached(path, key: list, compute):
    """The value pickled at `path` with `key`, else `compute()` pickled there with it (whole or not at all,
    also with readers beside; uncached where the folder cannot be written)."""

    found, value = _read(path, key)
    if found:
        return value
    value = compute()
    try:
        with atomic_write(path) as file:
            pickle.dump((key, value), file, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:
        pass
    return value


def _read(path, key: list) -> tuple:
    """(True, the value pickled at `path`) where it was pickled with `key`, else (False, None)."""

    try:
        with open(path, "rb") as file:
            stored, value = pickle.load(file)
        if stored == key:
            return True, value
    except (OSError, ValueError, TypeError, EOFError, AttributeError, ImportError, pickle.UnpicklingError):
        pass  # no copy yet, or one this code cannot read
    return False, None


_CODE: list = []


def code_version() -> str:
    """A digest of the code that builds the cached tables and results (CODE, and CACHE_FORMAT): a copy made
    by other code is never served."""
    if not _CODE:
        package = Path(__file__).resolve().parents[1]
        digest = hashlib.sha256(str(CACHE_FORMAT).encode())
        for part in CODE:
            for path in sorted((package / part).rglob("*.py")) if (package / part).is_dir() else [package / part]:
                digest.update(str(path.relative_to(package)).encode() + path.read_bytes())
        _CODE.append(digest.hexdigest()[:16])
    return _CODE[0]


_MARKS = {"qmark": "?", "format": "%s", "pyformat": "%s"}  # a DB-API paramstyle's positional placeholder


def _query(connection, mark: str, sql: str, *args) -> list:
    """The rows of `sql`, its parameters written `?`, on a DB-API connection whose placeholder is `mark`."""
    cursor = connection.cursor()
    try:
        cursor.execute(sql.replace("?", mark), args)
        return cursor.fetchall()
    finally:
        cursor.close()


def _state_key(connection, mark: str, study_id: int) -> list:
    """What changes whenever a trial of the study is added, changes state or finishes, or the study gets an
    attribute (a robustness record, an ablation path) or its directions. The table holds finished trials only,
    and a finished trial never changes: Optuna refuses to write to one, and the driver writes a trial's values
    and attributes only while it runs or in the transaction that finishes it. So the key reads no attribute of
    a trial (their lengths read the whole table: 1.5 s at 100,000 trials, in every command). Read through a
    DB-API `connection` (placeholder `mark`), the same from sqlite3 and from SQLAlchemy's driver."""

    def rows(sql: str) -> list:
        return [[str(v) for v in row] for row in _query(connection, mark, sql, study_id)]
    trials = rows("SELECT state, count(*), min(trial_id), max(trial_id), max(datetime_complete) FROM trials "
                  "WHERE study_id = ? GROUP BY state ORDER BY state")
    study = [rows("SELECT key, value_json FROM study_user_attributes WHERE study_id = ? ORDER BY key"),
             rows("SELECT objective, direction FROM study_directions WHERE study_id = ? ORDER BY objective")]
    return [CACHE_FORMAT, trials, hashlib.sha256(repr(study).encode()).hexdigest()]
