"""The statements `DriverStorage` (`driver_storage`) runs on an RDB study, beside Optuna's ORM: trials read
a statement per table and built as Optuna builds them, and held writes written a statement per kind.

Optuna's read of a study's trials, through its ORM, is far slower (docs/performance.md), and it writes each
parameter, attribute and intermediate value in a transaction of its own. The caller's methods retry these
(`storage_health.retried`) and keep what they read or hold; here is only the SQL.
"""
from __future__ import annotations

import datetime
import importlib
import json

from optuna.distributions import distribution_to_json

from sensitivity import private_apis


def trial_states(backend, trial_ids: set) -> list:
    """[(trial id, state)] of `trial_ids` in the storage."""
    models = private_apis.rdb_models()
    with private_apis.scoped_session(backend) as session:
        return session.query(models.TrialModel.trial_id, models.TrialModel.state).filter(
            models.TrialModel.trial_id.in_(trial_ids)).all()


def read_rows(backend, study_id: int, included: set, seen: int, skipped: set, leave_out: tuple) -> tuple:
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
    with private_apis.scoped_session(backend) as session:
        rows = session.execute(sa.select(trials.c.trial_id, trials.c.number, trials.c.state,
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
            return session.execute(query.order_by(table.c[order]) if order else query).all()

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


def insert(backend, session, held: list) -> None:
    """The parameters, attributes and intermediate values of `held`, [(trial id, held writes: `params`,
    `user_attrs`, `system_attrs`, `intermediate`)]: a statement for each kind."""
    models = private_apis.rdb_models()

    params = [{"trial_id": i, "param_name": name, "param_value": value,
               "distribution_json": distribution_to_json(distribution)}
              for i, h in held for name, value, distribution in h.params]
    if params:
        session.execute(models.TrialParamModel.__table__.insert(), params)
    for model, kind in ((models.TrialUserAttributeModel, "user_attrs"),
                        (models.TrialSystemAttributeModel, "system_attrs")):
        rows = [{"trial_id": i, "key": key, "value_json": json.dumps(value)}
                for i, h in held for key, value in getattr(h, kind).items()]
        upsert(backend, session, model, rows, ("trial_id", "key"), ("value_json",))
    stored = models.TrialIntermediateValueModel.intermediate_value_to_stored_repr
    rows = [{"trial_id": i, "step": step, **dict(zip(("intermediate_value", "intermediate_value_type"),
                                                      stored(value)))}
            for i, h in held for step, value in h.intermediate.items()]
    upsert(backend, session, models.TrialIntermediateValueModel, rows, ("trial_id", "step"),
           ("intermediate_value", "intermediate_value_type"))


def upsert(backend, session, model, rows: list, keys: tuple, columns: tuple) -> None:
    """Insert `rows`, or update `columns` where a row with the same `keys` exists (one statement, run for
    many rows: SQLAlchemy sends them in batches)."""
    if not rows:
        return
    dialect = backend.engine.name
    statement = importlib.import_module(f"sqlalchemy.dialects.{dialect}").insert(model.__table__)
    if dialect == "mysql":
        statement = statement.on_duplicate_key_update({c: statement.inserted[c] for c in columns})
    else:
        statement = statement.on_conflict_do_update(index_elements=list(keys),
                                                    set_={c: statement.excluded[c] for c in columns})
    session.execute(statement, rows)
