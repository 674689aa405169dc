"""The statements `DriverStorage` (`driver_storage`) runs on an RDB study, in SQLAlchemy Core on Optuna's
tables: trials read a statement per table and built as Optuna builds them, held writes written a statement
per kind, a trial created or its state changed in one or two.

Optuna's ORM does the same in more statements and more time (docs/performance.md): it reads each trial as
objects, writes each parameter, attribute and intermediate value in a transaction of its own, and takes
five statements to create a trial. A driver makes these calls several times a completion, at up to 50
completions a second. Reads (`reading`) run without a transaction on PostgreSQL; writes (`writing`) in one.
The caller's methods retry these (`storage_health.retried`) and keep what they read or hold; here is only
the SQL.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import importlib
import json
import types

from optuna.distributions import distribution_to_json

from sensitivity import private_apis


@contextlib.contextmanager
def reading(backend):
    """A connection for reads. On PostgreSQL it is in autocommit: under READ COMMITTED each statement sees a
    snapshot of its own inside a transaction too, which would add two round trips (BEGIN, COMMIT) and
    nothing else. Elsewhere the reads share a transaction (one snapshot in SQLite)."""
    with backend.engine.connect() as connection:
        if backend.engine.name == "postgresql":
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        yield connection


def writing(backend):
    """A transaction, committed at its end (rolled back on an error)."""
    return backend.engine.begin()


@functools.cache
def statements() -> types.SimpleNamespace:
    """Every statement but the upserts (`_upsert`), built once with its values bound at each execution:
    SQLAlchemy then finds its compiled form in its cache without building the statement again."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    models = private_apis.rdb_models()
    studies, trials = models.StudyModel.__table__, models.TrialModel.__table__
    params, attrs = models.TrialParamModel.__table__, models.StudySystemAttributeModel.__table__
    study_id, trial_id = sa.bindparam("study"), sa.bindparam("trial")
    state = sa.bindparam("state", type_=trials.c.state.type)

    def among(column, name):
        return column.in_(sa.bindparam(name, expanding=True))

    read = sa.and_(trials.c.study_id == study_id, sa.or_(
        among(trials.c.trial_id, "included"),
        sa.and_(trials.c.trial_id > sa.bindparam("seen"), ~among(trials.c.trial_id, "skipped"))))

    def children(model, *columns, order=None, leave_out=False):
        table = model.__table__
        query = sa.select(table.c.trial_id, *(table.c[c] for c in columns)).where(
            table.c.trial_id.in_(sa.select(trials.c.trial_id).where(read)))
        if leave_out:
            query = query.where(~among(table.c.key, "leave_out"))
        return query.order_by(table.c[order]) if order else query

    last = (sa.select(trials.c.number).where(trials.c.study_id == study_id)
            .order_by(trials.c.trial_id.desc()).limit(1).scalar_subquery())
    update = trials.update().where(trials.c.trial_id == trial_id, among(trials.c.state, "only_from"))
    study = sa.select(studies.c.study_id).where(studies.c.study_id == study_id)
    return types.SimpleNamespace(
        study_attrs=sa.select(attrs.c.key, attrs.c.value_json).where(attrs.c.study_id == study_id),
        study=study,
        lock_study=study.with_for_update(),
        rows=sa.select(trials.c.trial_id, trials.c.number, trials.c.state, trials.c.datetime_start,
                       trials.c.datetime_complete).where(read).order_by(trials.c.trial_id),
        children={"params": children(models.TrialParamModel, "param_name", "param_value", "distribution_json",
                                     order="param_id"),
                  "values": children(models.TrialValueModel, "objective", "value", "value_type"),
                  "user_attrs": children(models.TrialUserAttributeModel, "key", "value_json", leave_out=True),
                  "system_attrs": children(models.TrialSystemAttributeModel, "key", "value_json"),
                  "intermediate": children(models.TrialIntermediateValueModel, "step", "intermediate_value",
                                           "intermediate_value_type")},
        create=trials.insert().values(study_id=study_id, number=sa.func.coalesce(last, -1) + 1, state=state,
                                      datetime_start=sa.bindparam("start", type_=trials.c.datetime_start.type),
                                      datetime_complete=sa.bindparam("complete",
                                                                     type_=trials.c.datetime_complete.type))
        .returning(trials.c.trial_id, trials.c.number),
        known_distribution=sa.select(params.c.distribution_json)
        .join(trials, trials.c.trial_id == params.c.trial_id)
        .where(trials.c.study_id == study_id, params.c.param_name == sa.bindparam("name")).limit(1),
        lock_states=sa.select(trials.c.trial_id, trials.c.state).where(among(trials.c.trial_id, "ids"))
        .with_for_update(),
        state=sa.select(trials.c.state).where(trials.c.trial_id == trial_id),
        start=update.values(state=state, datetime_start=sa.bindparam("when")),
        finish=update.values(state=state, datetime_complete=sa.bindparam("when")),
        insert_params=params.insert())


@functools.cache
def _upsert(dialect: str, model, keys: tuple, columns: tuple):
    """Insert, or update `columns` where a row with the same `keys` exists: PostgreSQL's and SQLite's ON
    CONFLICT."""
    statement = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert(model.__table__)
    return statement.on_conflict_do_update(index_elements=list(keys),
                                           set_={c: statement.excluded[c] for c in columns})


def study_system_attrs(connection, study_id: int) -> dict:
    """The study's system attributes, as Optuna's `get_study_system_attrs` gives them (KeyError: no such
    study), in one statement where it has some."""
    rows = connection.execute(statements().study_attrs, {"study": study_id}).all()
    if not rows and connection.execute(statements().study, {"study": study_id}).first() is None:
        raise KeyError(f"No study with study_id {study_id} exists.")
    return {key: json.loads(value) for key, value in rows}


def trial_rows(connection, study_id: int, included: set, seen: int, skipped: set) -> list:
    """The rows (trial id, number, state, start, completion) of the trials in `included` and of those above
    `seen` not in `skipped`, by trial id: one statement."""
    return connection.execute(statements().rows, _read_values(study_id, included, seen, skipped)).all()


def child_rows(connection, study_id: int, included: set, seen: int, skipped: set, leave_out: tuple) -> dict:
    """The rows of each child table (`params`, `values`, `user_attrs` less the keys in `leave_out`,
    `system_attrs`, `intermediate`) of the trials `trial_rows` reads with the same arguments: a statement
    per table."""
    values = {**_read_values(study_id, included, seen, skipped), "leave_out": list(leave_out)}
    return {kind: connection.execute(query, values).all() for kind, query in statements().children.items()}


def _read_values(study_id: int, included: set, seen: int, skipped: set) -> dict:
    return {"study": study_id, "included": list(included), "seen": seen, "skipped": list(skipped)}


def build(rows: list, read: dict, decoded, shared_attrs: tuple) -> list:
    """FrozenTrials from `rows` (`trial_rows`) and their children (`read`: `child_rows`), as Optuna's `_build_frozen_trial_from_trial_model`;
    `decoded(text, decode)` decodes each distribution and each user attribute in `shared_attrs`."""
    # lazy: optuna
    from optuna.distributions import json_to_distribution
    models = private_apis.rdb_models()
    # lazy: optuna
    from optuna.trial import FrozenTrial

    parts = {row.trial_id: {"params": {}, "distributions": {}, "values": {}, "user_attrs": {},
                            "system_attrs": {}, "intermediate": {}} for row in rows}
    for trial_id, name, value, distribution_json in read["params"]:
        if trial_id in parts:
            distribution = decoded(distribution_json, json_to_distribution)
            parts[trial_id]["params"][name] = distribution.to_external_repr(value)
            parts[trial_id]["distributions"][name] = distribution
    for trial_id, objective, value, value_type in read["values"]:
        if trial_id in parts:
            parts[trial_id]["values"][objective] = models.TrialValueModel.stored_repr_to_value(value, value_type)
    for kind in ("user_attrs", "system_attrs"):
        for trial_id, key, value_json in read[kind]:
            if trial_id in parts:
                parts[trial_id][kind][key] = (decoded(value_json, json.loads) if key in shared_attrs
                                              else json.loads(value_json))
    for trial_id, step, value, value_type in read["intermediate"]:
        if trial_id in parts:
            parts[trial_id]["intermediate"][step] = \
                models.TrialIntermediateValueModel.stored_repr_to_intermediate_value(value, value_type)
    built = []
    for row in rows:
        p = parts[row.trial_id]
        values = [p["values"][i] for i in range(len(p["values"]))] if p["values"] else None
        built.append(FrozenTrial(number=row.number, state=row.state, value=None, values=values,
                                 datetime_start=local_time(row.datetime_start),
                                 datetime_complete=local_time(row.datetime_complete), params=p["params"],
                                 distributions=p["distributions"], user_attrs=p["user_attrs"],
                                 system_attrs=p["system_attrs"], intermediate_values=p["intermediate"],
                                 trial_id=row.trial_id))
    return built


def local_time(utc):
    """A naive UTC time from the database as the naive local time Optuna gives."""
    return None if utc is None else utc.replace(tzinfo=datetime.timezone.utc).astimezone().replace(tzinfo=None)


def create_trial(connection, study_id: int, state, start, complete) -> tuple:
    """A new trial row of the study, numbered as Optuna numbers it (its earlier trials counted: the last
    one's number plus one), under a lock on the study's row, as Optuna takes it: (trial id, number).
    KeyError: no such study. The number is read inside the INSERT, after the lock is held."""
    if connection.execute(statements().lock_study, {"study": study_id}).first() is None:
        raise KeyError(f"No study with study_id {study_id} exists.")
    return tuple(connection.execute(statements().create, {"study": study_id, "state": state, "start": start,
                                                          "complete": complete}).one())


def check_params(connection, study_id: int, params: list) -> None:
    """Each of `params`, [(name, internal value, distribution)], checked against the distribution its name
    has in the study's earlier trials, as Optuna checks a parameter it writes (ValueError if they differ)."""
    # lazy: optuna
    from optuna.distributions import check_distribution_compatibility, json_to_distribution

    for name, _, distribution in params:
        known = connection.execute(statements().known_distribution, {"study": study_id, "name": name}).scalar()
        if known is not None:
            check_distribution_compatibility(json_to_distribution(known), distribution)


def lock_states(connection, trial_ids: set) -> dict:
    """{trial id: state} of `trial_ids`, their rows locked until the transaction ends."""
    return dict(connection.execute(statements().lock_states, {"ids": list(trial_ids)}).all())


def set_state(connection, trial_id: int, state, when, only_from: tuple) -> bool:
    """The trial's state set to `state` if it is now one of `only_from` (its row locked until the transaction
    ends), with `when` as its start (RUNNING) or completion time; whether it was."""
    statement = statements().start if state.name == "RUNNING" else statements().finish
    done = connection.execute(statement, {"trial": trial_id, "state": state, "when": when,
                                          "only_from": list(only_from)})
    return done.rowcount == 1


def trial_state(connection, trial_id: int):
    """The trial's state (KeyError: no such trial)."""
    state = connection.execute(statements().state, {"trial": trial_id}).scalar()
    if state is None:
        raise KeyError(f"No trial with trial_id {trial_id} exists.")
    return state


def write_values(connection, trial_id: int, values: list) -> None:
    """The trial's objective values, replacing any it has (Optuna's stored form: inf and nan as types)."""
    model = private_apis.rdb_models().TrialValueModel
    rows = [{"trial_id": trial_id, "objective": objective,
             **dict(zip(("value", "value_type"), model.value_to_stored_repr(value)))}
            for objective, value in enumerate(values or [])]
    upsert(connection, model, rows, ("trial_id", "objective"), ("value", "value_type"))


def insert(connection, held: list) -> None:
    """The parameters, attributes and intermediate values of `held`, [(trial id, held writes: `params`,
    `user_attrs`, `system_attrs`, `intermediate`)]: a statement for each kind."""
    models = private_apis.rdb_models()

    params = [{"trial_id": i, "param_name": name, "param_value": value,
               "distribution_json": distribution_to_json(distribution)}
              for i, h in held for name, value, distribution in h.params]
    if params:
        connection.execute(statements().insert_params, params)
    for model, kind in ((models.TrialUserAttributeModel, "user_attrs"),
                        (models.TrialSystemAttributeModel, "system_attrs")):
        rows = [{"trial_id": i, "key": key, "value_json": json.dumps(value)}
                for i, h in held for key, value in getattr(h, kind).items()]
        upsert(connection, model, rows, ("trial_id", "key"), ("value_json",))
    stored = models.TrialIntermediateValueModel.intermediate_value_to_stored_repr
    rows = [{"trial_id": i, "step": step, **dict(zip(("intermediate_value", "intermediate_value_type"),
                                                      stored(value)))}
            for i, h in held for step, value in h.intermediate.items()]
    upsert(connection, models.TrialIntermediateValueModel, rows, ("trial_id", "step"),
           ("intermediate_value", "intermediate_value_type"))


def upsert(connection, model, rows: list, keys: tuple, columns: tuple) -> None:
    """Insert `rows`, or update `columns` where a row with the same `keys` exists (one statement, run for
    many rows: SQLAlchemy sends them in batches)."""
    if rows:
        connection.execute(_upsert(connection.engine.name, model, keys, columns), rows)
