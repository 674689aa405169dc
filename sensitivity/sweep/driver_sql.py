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
import importlib
import json

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


def trial_states(connection, trial_ids: set) -> list:
    """[(trial id, state)] of `trial_ids` in the storage."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    trials = private_apis.rdb_models().TrialModel.__table__
    return connection.execute(sa.select(trials.c.trial_id, trials.c.state)
                              .where(trials.c.trial_id.in_(trial_ids))).all()


def study_system_attrs(connection, study_id: int) -> dict:
    """The study's system attributes, as Optuna's `get_study_system_attrs` gives them (KeyError: no such
    study), in one statement where it has some."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    models = private_apis.rdb_models()
    attrs = models.StudySystemAttributeModel.__table__
    rows = connection.execute(sa.select(attrs.c.key, attrs.c.value_json)
                              .where(attrs.c.study_id == study_id)).all()
    if not rows:
        studies = models.StudyModel.__table__
        if connection.execute(sa.select(studies.c.study_id).where(studies.c.study_id == study_id)).first() is None:
            raise KeyError(f"No study with study_id {study_id} exists.")
    return {key: json.loads(value) for key, value in rows}


def read_rows(connection, study_id: int, included: set, seen: int, skipped: set, leave_out: tuple) -> tuple:
    """(the trial rows, the rows of each child table by kind) of the trials in `included` and those above
    `seen` not in `skipped`, the user attributes in `leave_out` left out: a statement per table, no ORM
    object. No rows: ([], {})."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    models = private_apis.rdb_models()

    trials = models.TrialModel.__table__
    wanted = trials.c.trial_id > seen
    if skipped:
        wanted = sa.and_(wanted, trials.c.trial_id.notin_(skipped))
    if included:
        wanted = sa.or_(trials.c.trial_id.in_(included), wanted)
    where = sa.and_(trials.c.study_id == study_id, wanted)
    rows = connection.execute(sa.select(trials.c.trial_id, trials.c.number, trials.c.state,
                                        trials.c.datetime_start, trials.c.datetime_complete)
                              .where(where).order_by(trials.c.trial_id)).all()
    if not rows:
        return [], {}
    ids = sa.select(trials.c.trial_id).where(where)

    def children(model, *columns, order=None, leave_out=()):
        table = model.__table__
        query = sa.select(table.c.trial_id, *(table.c[c] for c in columns)).where(table.c.trial_id.in_(ids))
        if leave_out:
            query = query.where(table.c.key.notin_(leave_out))
        return connection.execute(query.order_by(table.c[order]) if order else query).all()

    read = {"params": children(models.TrialParamModel, "param_name", "param_value", "distribution_json",
                               order="param_id"),
            "values": children(models.TrialValueModel, "objective", "value", "value_type"),
            "user_attrs": children(models.TrialUserAttributeModel, "key", "value_json", leave_out=leave_out),
            "system_attrs": children(models.TrialSystemAttributeModel, "key", "value_json"),
            "intermediate": children(models.TrialIntermediateValueModel, "step", "intermediate_value",
                                     "intermediate_value_type")}
    return rows, read


def build(rows: list, read: dict, decoded, shared_attrs: tuple) -> list:
    """FrozenTrials from the rows of `read_rows`, as Optuna's `_build_frozen_trial_from_trial_model`;
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


def writing(backend):
    """A transaction, committed at its end (rolled back on an error)."""
    return backend.engine.begin()


def create_trial(connection, study_id: int, state, start, complete) -> tuple:
    """A new trial row of the study, numbered as Optuna numbers it (its earlier trials counted: the last
    one's number plus one), under a lock on the study's row, as Optuna takes it: (trial id, number).
    KeyError: no such study. The number is read inside the INSERT, after the lock is held."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    models = private_apis.rdb_models()
    studies, trials = models.StudyModel.__table__, models.TrialModel.__table__

    locked = connection.execute(sa.select(studies.c.study_id).where(studies.c.study_id == study_id)
                                .with_for_update()).first()
    if locked is None:
        raise KeyError(f"No study with study_id {study_id} exists.")
    last = (sa.select(trials.c.number).where(trials.c.study_id == study_id)
            .order_by(trials.c.trial_id.desc()).limit(1).scalar_subquery())
    return tuple(connection.execute(
        trials.insert().values(study_id=study_id, number=sa.func.coalesce(last, -1) + 1, state=state,
                               datetime_start=start, datetime_complete=complete)
        .returning(trials.c.trial_id, trials.c.number)).one())


def check_params(connection, study_id: int, params: list) -> None:
    """Each of `params`, [(name, internal value, distribution)], checked against the distribution its name
    has in the study's earlier trials, as Optuna checks a parameter it writes (ValueError if they differ)."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    # lazy: optuna
    from optuna.distributions import check_distribution_compatibility, json_to_distribution
    models = private_apis.rdb_models()
    params_table, trials = models.TrialParamModel.__table__, models.TrialModel.__table__

    for name, _, distribution in params:
        known = connection.execute(
            sa.select(params_table.c.distribution_json).join(trials, trials.c.trial_id == params_table.c.trial_id)
            .where(trials.c.study_id == study_id, params_table.c.param_name == name).limit(1)).scalar()
        if known is not None:
            check_distribution_compatibility(json_to_distribution(known), distribution)


def lock_states(connection, trial_ids: set) -> dict:
    """{trial id: state} of `trial_ids`, their rows locked until the transaction ends."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    trials = private_apis.rdb_models().TrialModel.__table__
    return dict(connection.execute(sa.select(trials.c.trial_id, trials.c.state)
                                   .where(trials.c.trial_id.in_(trial_ids)).with_for_update()).all())


def set_state(connection, trial_id: int, state, when, only_from: tuple) -> bool:
    """The trial's state set to `state` if it is now one of `only_from` (its row locked until the transaction
    ends), with `when` as its start (RUNNING) or completion time; whether it was."""
    trials = private_apis.rdb_models().TrialModel.__table__
    moment = {"datetime_start" if state.name == "RUNNING" else "datetime_complete": when}
    done = connection.execute(trials.update().where(trials.c.trial_id == trial_id, trials.c.state.in_(only_from))
                              .values(state=state, **moment))
    return done.rowcount == 1


def trial_state(connection, trial_id: int):
    """The trial's state (KeyError: no such trial)."""
    # lazy: sqlalchemy
    import sqlalchemy as sa
    trials = private_apis.rdb_models().TrialModel.__table__
    state = connection.execute(sa.select(trials.c.state).where(trials.c.trial_id == trial_id)).scalar()
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
        connection.execute(models.TrialParamModel.__table__.insert(), params)
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
    many rows: SQLAlchemy sends them in batches); PostgreSQL's and SQLite's ON CONFLICT."""
    if not rows:
        return
    dialect = connection.engine.name
    statement = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert(model.__table__)
    statement = statement.on_conflict_do_update(index_elements=list(keys),
                                                set_={c: statement.excluded[c] for c in columns})
    connection.execute(statement, rows)
