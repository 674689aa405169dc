"""Reading studies back: list them, show one, export its trials as CSV or Parquet, serve the dashboard."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from sensitivity.studies.records import REGIME_BEFORE_SEMANTICS, is_final
from sensitivity.studies.storage import StorageError, default_url, folder_beside, open_storage, remember_sound
from sensitivity.studies.trial_rows import trial_records

ARTIFACTS = "artifacts"  # the artifact store's folder beside the storage (`notes.artifact_dir`)
EXPORT_ATTRS = ("status", "reason", "seed", "config_id", "accuracy", "val_accuracy", "loss", "train_time_s",
                "setup_time_s", "compile_time_s", "test_time_s", "throughput", "peak_rss_mb", "cpu_percent",
                "flops_per_s", "params", "steps", "retry_of", "orphaned", "default", "default_source", "source_dataset",
                "own_default", "default_kind", "budget", "budget_scale", "samples_scale", "published_epochs", "run_epochs",
                "crossover", "tuned_for", "placebo", "tuned_config", "tuned_key", "parallel", "timing", "timed_study",
                "timed_trial", "fresh_seed", "tunability", "phase", "knobs", "grid_point", "grid_home")


def list_studies(storage_url=None) -> list:
    """A row per study: its name, trials, final trials, directions and the start of its first trial. Read by
    `trial_records` (Optuna's study summaries build every trial of every study through its ORM: 14 s for a study
    of 10,000 trials)."""
    # lazy: optuna
    import optuna

    storage = open_storage(storage_url, must_exist=True)
    rows = []
    for frozen in storage.get_all_studies():
        study = optuna.load_study(study_name=frozen.study_name, storage=storage)
        trials = trial_records(study, ("orphaned", "surplus"))
        started = min((t.started for t in trials if t.started is not None), default=None)
        rows.append({"study": frozen.study_name, "trials": len(trials), "final": sum(map(is_final, trials)),
                     "directions": ",".join(d.name.lower() for d in frozen.directions),
                     "started": started.isoformat(" ", "seconds") if started else ""})
    return rows


def load(name: str, storage_url=None):
    # lazy: optuna
    import optuna
    storage = open_storage(storage_url, must_exist=True)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        names = optuna.get_all_study_names(storage)
        raise StorageError(f"no study {name!r} in this storage; studies: {', '.join(names) or 'none'}") from None
    remember_sound(storage_url or default_url())
    return study


FRAME_ATTRS = EXPORT_ATTRS + ("env", "spec", "planned", "curve")  # the user attributes trials_frame reads
TEXT_ATTRS = ("curve",)  # read as the JSON text stored (`trial_records`): the frame holds it as text


def trials_frame(study, records=None):
    """One row per trial: number, state, values, parameters (param_*), results (the TrialResult fields).
    `records` (of `trial_records`, with at least FRAME_ATTRS, and TEXT_ATTRS as text) are the trials, else
    read from the study."""
    # lazy: pandas
    import pandas as pd

    heads, attrs_of, curves = [], [], []
    space_dataset = (study.user_attrs.get("space") or {}).get("dataset")
    no_values = [None] * len(study.directions)
    for t in trial_records(study, FRAME_ATTRS, TEXT_ATTRS) if records is None else records:
        head = {"number": t.number, "state": t.state, "duration_s": t.duration_s}
        for i, value in enumerate(t.values or no_values):
            head[f"value_{i}"] = value
        head.update({f"param_{k}": v for k, v in t.params.items()})
        heads.append(head)
        attrs_of.append(t.user_attrs)
        curve = t.user_attrs.get("curve")
        curves.append(curve if curve not in (None, "null") else "[]")
    if not heads:
        return pd.DataFrame()
    # the columns every trial has, a list each (a dict per trial, merged by pandas, took twice as long)
    tail = {k: [a.get(k) for a in attrs_of] for k in EXPORT_ATTRS}
    tail["framework_version"] = [(a.get("env") or {}).get("framework_version") for a in attrs_of]
    tail["semantics"] = [_regime(a) for a in attrs_of]
    tail["dataset"] = [(a.get("planned") or {}).get("dataset") or space_dataset for a in attrs_of]
    head = pd.DataFrame(heads)
    common = pd.DataFrame(tail, index=head.index)
    # opaque JSON texts: the Python strings read, not copied into Arrow (146 MB of them at 100,000 trials)
    common["curve"] = pd.Series(curves, index=head.index, dtype=object)
    first = set(heads[0])  # pandas's order of a dict per trial: the first trial's keys, then those later ones add
    return pd.concat([head[list(heads[0])], common, head[[c for c in head.columns if c not in first]]], axis=1)


def _regime(attrs: dict):
    """The semantics a trial ran (native or canonical), from the spec it recorded or was planned with."""
    spec = attrs.get("spec") or attrs.get("planned")
    return None if spec is None else {**REGIME_BEFORE_SEMANTICS, **spec}["semantics"]


def show(study) -> str:
    """A readable table of the trials, then the best trial or the Pareto set."""
    records = trial_records(study, FRAME_ATTRS + ("surplus",), TEXT_ATTRS, system_keys=True)
    frame = trials_frame(study, records)
    if frame.empty:
        return f"study {study.study_name}: no trials"
    columns = ["number", "state", "status", "semantics"] + [c for c in frame.columns if c.startswith(("param_", "value_"))] \
        + ["accuracy", "train_time_s", "duration_s"]
    lines = [f"study {study.study_name}: {len(frame)} trials, {sum(map(is_final, records))} final",
             frame[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}")]
    label = "best trial" if len(study.directions) == 1 else "Pareto set"
    lines.append(f"{label}: " + (", ".join(f"#{t.number} {t.params} -> {t.values}" for t in _best(study, records))
                                 or "none yet"))
    return "\n".join(lines)


def _best(study, records) -> list:
    """Optuna's `best_trials`, found in `records` (its property reads every trial through its ORM: seconds for
    10,000): the complete trials no other dominates, by number; with one objective, every one of the best value.
    A study whose trials carry constraints (`constraints` or `constraints:NAME` system attributes) asks Optuna,
    which keeps the feasible."""
    # lazy: numpy
    import numpy as np

    if any(k.partition(":")[0] == "constraints" for t in records for k in t.system_keys):
        try:
            return study.best_trials
        except ValueError:
            return []
    complete = [t for t in records if t.state == "COMPLETE" and t.values]
    signs = [1.0 if d.name == "MINIMIZE" else -1.0 for d in study.directions]
    loss = np.array([t.values for t in complete], dtype=float).reshape(len(complete), len(signs)) * signs
    # In lexicographic order a trial can be dominated only by an earlier one, and then by one on the front.
    front = np.empty_like(loss)
    chosen = []
    for i in np.lexsort(loss.T[::-1]):
        ahead = front[:len(chosen)]
        if not np.any(np.all(ahead <= loss[i], axis=1) & np.any(ahead < loss[i], axis=1)):
            front[len(chosen)] = loss[i]
            chosen.append(i)
    return [complete[i] for i in sorted(chosen)]


def export(study, fmt: str, out: Path) -> Path:
    frame = trials_frame(study)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(out, index=False)
    else:
        frame.to_parquet(out, index=False)
    return out


def dashboard(storage_url, port: int, artifact_dir=None) -> int:
    """optuna-dashboard on 127.0.0.1 (not on every interface) until interrupted. A password in the URL goes
    to it in PGPASSWORD (libpq reads it; the environment, unlike the argv, is the user's own to read). Its
    artifacts (`report --to-dashboard`'s figures) come from `artifact_dir`, by default the folder beside the
    storage where the report writes them (`notes.artifact_dir`), where that exists."""
    url = storage_url or default_url()
    open_storage(url, must_exist=True)  # a clear error now rather than from the dashboard
    target, password = _without_password(url.removeprefix("journal:"))  # a journal file by its path
    environ = dict(os.environ, **({"PGPASSWORD": password} if password is not None else {}))
    folder = Path(artifact_dir) if artifact_dir else folder_beside(url, ARTIFACTS)
    command = [str(Path(sys.executable).parent / "optuna-dashboard"), target, "--host", "127.0.0.1",
               "--port", str(port), *(["--artifact-dir", str(folder)] if artifact_dir or folder.is_dir() else [])]
    print(f"optuna-dashboard on http://127.0.0.1:{port}/", file=sys.stderr)
    sys.stderr.flush()
    os.execve(command[0], command, environ)  # become the dashboard: a signal to this process reaches the server


def _without_password(url: str):
    """(`url` without its password, the password or None): the user part's or `?password=`'s, read as
    SQLAlchemy (which the dashboard opens it with) reads them; a file's path as it is."""
    if "://" not in url or url.startswith("sqlite:"):
        return url, None
    # lazy: sqlalchemy
    from sqlalchemy.engine import URL, make_url

    parsed = make_url(url)
    query = {k: v for k, v in parsed.query.items() if k != "password"}
    password = parsed.query.get("password", parsed.password)  # the query's wins, as in SQLAlchemy's dialects
    if password is None:
        return url, None
    if isinstance(password, tuple):  # `?password=a&password=b`
        password = password[-1]
    bare = URL.create(parsed.drivername, parsed.username, None, parsed.host, parsed.port, parsed.database, query)
    return bare.render_as_string(hide_password=False), str(password)
