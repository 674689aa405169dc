"""The trial table every analysis reads, and the grouping every analysis shares (bins and labels of parameter
values: `sensitivity.analysis.tables.parameter_values`).

`trials_table` gives one row per final trial (orphans and surplus trials left out) with an `outcome`:
`ok`, `collapsed` and `diverged` (Optuna COMPLETE; a diverged trial keeps its measured, chance-level accuracy),
`pruned` (kept apart: never on a frontier) and `failed` (FAIL, timeouts included: counted, never scored).
A run that finished with status ok is `collapsed` where it did not train (`collapsed_mask`): its final training
loss within COLLAPSE_LOSS of ln(classes), the loss of a uniform guess, or its test accuracy within
COLLAPSE_ACCURACY of chance (1/classes). Like a diverged run it keeps its accuracy where a configuration's
outcome is scored (importance, the design's objective) and is counted apart where accuracies are compared.
Parameters keep Optuna's `param_` prefix; `framework` repeats `param_framework` (missing, and
the regime with it, where none is recorded: `unframed`); `curve` is the JSON text
of the trial's per-epoch curve as stored, "[]" where none (`parse_curves` gives the lists: the learning curves
alone read them, and parsing every curve was a sixth of the table's build); `gpu_*` and `env_*` flatten the
result's `gpu` and `env` records (`env_semantics` is the dict a result records of its regime: regime, knobs,
rule, init, optimizer, schedule).

`semantics` is each trial's regime (native or canonical; see `sensitivity.core.semantics`). Numbers of different
regimes are never aggregated together: `BY_FRAMEWORK`, the keys every per-framework analysis groups by,
holds it next to `framework`, and `grouped` lists native first.
"""
from __future__ import annotations

import contextlib
import gc
import json
import weakref

import numpy as np
import pandas as pd

from sensitivity.analysis.statistics import REGIME
from sensitivity.private_apis import storage_location
from sensitivity.studies.catalog import FRAME_ATTRS, TEXT_ATTRS, trials_frame
from sensitivity.studies.records import FINAL_STATES
from sensitivity.studies.redaction import describe
from sensitivity.studies.trial_rows import cached_frame, parse_json, trial_records

OUTCOMES = ("ok", "collapsed", "diverged", "pruned", "failed")
TRAINED = ("ok", "collapsed", "diverged")
UNTRAINED = ("collapsed", "diverged")  # runs that finished without training: counted apart, rates by exact test
COLLAPSE_LOSS = 0.005  # relative to ln(classes): a final training loss within 0.5% of a uniform guess's
COLLAPSE_ACCURACY = 0.05  # absolute: a test accuracy at most 0.05 above chance (1/classes)
PARAM = "param_"
METRICS = ("accuracy", "val_accuracy", "loss", "train_time_s", "setup_time_s", "compile_time_s", "test_time_s",
           "wall_time_s", "throughput", "peak_rss_mb", "cpu_percent", "flops_per_s", "gpu_utilization_percent",
           "gpu_peak_memory_mb", "gpu_energy_j")
GPU_FIELDS = ("name", "utilization_percent", "peak_memory_mb", "energy_j")
ENV_FIELDS = ("python", "numpy", "host", "platform", "cpu", "gpu", "device", "threads", "git_revision", "init",
              "model", "semantics")
REGIMES = ("native", "canonical")  # the order every table and figure shows them in
BY_FRAMEWORK = ("framework", REGIME)


class NotEnoughData(ValueError):
    """An analysis lacks the trials it needs; the message says what would fill it."""


def trials_table(source) -> pd.DataFrame:
    """The trial table of a study, or of a frame from `sensitivity.studies.catalog.trials_frame` (or its CSV).

    A table already made by this function is returned as it is. `attrs` holds the study's name, storage
    (without password), dataset, parameter distributions (JSON) and the records of `sensitivity
    robustness` (trial number -> record) when the source is a study.
    """
    if isinstance(source, pd.DataFrame):
        if "outcome" in source.columns:
            return source
        frame = pd.DataFrame(source, copy=True)  # without attrs: the constructor copies none
        frame.attrs = source.attrs
        return _normalise(frame)
    return _from_study(source)


class SharedRecord(dict):
    """A study's record in a table's attrs, passed on by reference: pandas deep-copies attrs at every operation
    (`NDFrame.__finalize__`), and robustness records run to megabytes. The analysis only reads them."""

    def __deepcopy__(self, memo):
        return self


def shared_records(attrs: dict) -> dict:
    """`attrs` with its records (HEAVY_ATTRS) made SharedRecords."""
    return {k: SharedRecord(v) if k in HEAVY_ATTRS and isinstance(v, dict) else v for k, v in attrs.items()}


def _from_study(study) -> pd.DataFrame:
    """The study's table, normalised, from the cache of `trial_rows.cached_frame` while the study is unchanged."""

    space = study.user_attrs.get("space") or {}

    def build(study):
        frame = _trials_of(study)
        frame.attrs["dataset"] = space.get("dataset")
        return _compact(_normalise(frame))
    frame = cached_frame(study, build)
    frame.attrs.update(study=study.study_name, storage=storage_description(study), dataset=space.get("dataset"),
                       directions=[d.name.lower() for d in study.directions],
                       ablation=study.user_attrs.get("ablation"), forecast=study.user_attrs.get("forecast"),
                       last_run=study.user_attrs.get("last_run"),
                       reproduce=study.user_attrs.get("reproduce"),
                       robustness={int(k.split(":", 1)[1]): v for k, v in study.user_attrs.items()
                                   if k.startswith("robustness:") and v is not None},
                       robustness_protocol=study.user_attrs.get("robustness_protocol"))
    frame.attrs = shared_records(frame.attrs)
    return frame


def _compact(table: pd.DataFrame) -> pd.DataFrame:
    """Equal env `semantics` records made one object, so that a cached copy pickles each once; the table is
    read only, never changed in place. Equal by their repr (records written by the same code keep one key
    order): half the time of sorted JSON."""
    if "env_semantics" in table:
        same = {}
        table["env_semantics"] = [same.setdefault(repr(r), r) if isinstance(r, dict) else r
                                  for r in table["env_semantics"]]
    return table


def _trials_of(study) -> pd.DataFrame:
    """The study's trials (`trials_frame` and `_extra_fields`), their distributions in attrs."""

    with paused_collection():
        records = trial_records(study, FRAME_ATTRS + _EXTRA_ATTRS, TEXT_ATTRS)  # once, in bulk where possible
        frame = trials_frame(study, records)
        extras = _extra_fields(records)
    if not frame.empty:
        frame = frame.merge(extras, on="number", how="left")
    distributions = {}
    for record in records:
        for name, dist in record.distributions.items():
            distributions.setdefault(name, dist)
    frame.attrs["distributions"] = distributions
    return frame


_EXTRA_COLUMNS = (["number", "surplus", "wall_time_s", "is_default", "planned", "test_correct"]
                  + [f"gpu_{k}" for k in GPU_FIELDS] + [f"env_{k}" for k in ENV_FIELDS] + ["env_kernel_isa"])
_EXTRA_ATTRS = ("surplus", "wall_time_s", "is_default", "planned", "test_correct", "gpu", "env")


def _extra_fields(records) -> pd.DataFrame:
    """What `trials_frame` leaves out, one row per record: the GPU and environment records, surplus and default
    flags. Built a column at a time: a frame of a dict per trial took four times as long."""
    attrs = [t.user_attrs for t in records]
    gpus, envs = [a.get("gpu") or {} for a in attrs], [a.get("env") or {} for a in attrs]
    columns = {"number": [t.number for t in records], "surplus": [a.get("surplus") for a in attrs],
               "wall_time_s": [a.get("wall_time_s") for a in attrs],
               "is_default": [a.get("is_default") for a in attrs],
               "planned": [bool(a.get("planned")) for a in attrs],
               "test_correct": [a.get("test_correct") for a in attrs]}  # packed text (core.correctness): transfer
    columns.update({f"gpu_{k}": [gpu.get(k) for gpu in gpus] for k in GPU_FIELDS})
    columns.update({f"env_{k}": [env.get(k) for env in envs] for k in ENV_FIELDS})
    columns["env_kernel_isa"] = [(env.get("kernels") or {}).get("isa") for env in envs]  # the CPU kernels' summary
    return pd.DataFrame(columns, columns=_EXTRA_COLUMNS)


def storage_description(study) -> str:
    """The study's storage as a URL safe to show (no password): RDB URL, journal file, or in memory."""

    location = storage_location(study)
    if location is None:
        return "in memory"
    kind, where = location
    return describe(where) if kind == "url" else f"journal:{where}"


def _normalise(frame: pd.DataFrame) -> pd.DataFrame:
    """The table of a frame this module owns (its attrs are taken off while it works, and put back after)."""
    attrs = shared_records(frame.attrs)
    frame.attrs = {}
    for column in ("number", "state", "status"):
        if column not in frame:
            frame[column] = range(len(frame)) if column == "number" else None
    if "state" in frame and frame["state"].notna().any():
        frame = frame[frame["state"].isin(FINAL_STATES)]
    for flag in ("orphaned", "surplus"):
        if flag in frame:
            frame = frame[~frame[flag].eq(True)]
    frame = frame.copy()
    if PARAM + "framework" in frame:
        frame["framework"] = frame[PARAM + "framework"].astype(str)
    elif "framework" not in frame:
        frame["framework"] = None  # a study another program wrote: no framework, none invented (unframed)
    dataset = frame["dataset"] if "dataset" in frame else pd.Series(None, index=frame.index, dtype=object)
    frame["dataset"] = dataset.where(dataset.notna(), attrs.get("dataset") or "unknown")
    frame["semantics"] = _regimes(frame)
    seeds = frame["seed"] if "seed" in frame else pd.Series(0, index=frame.index)
    frame["seed"] = pd.to_numeric(seeds, errors="coerce").fillna(0).astype(int)  # TrialSpec's default seed
    ids = frame["config_id"] if "config_id" in frame else pd.Series(None, index=frame.index, dtype=object)
    frame["config_id"] = ids.where(ids.notna(), "#" + frame["number"].astype(str)).astype(str)
    frame["outcome"] = _outcomes(frame)
    for column in METRICS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce") if column in frame else np.nan
    frame["curve"] = pd.Series(_curve_texts(frame["curve"]) if "curve" in frame else "[]", index=frame.index,
                               dtype=object)  # opaque texts: as objects, they pickle at a third of Arrow's time
    if "is_default" in frame and frame["is_default"].notna().any():
        frame["is_default"] = frame["is_default"].eq(True)
    else:
        frame = frame.drop(columns="is_default", errors="ignore")
    frame.attrs = attrs
    return frame.reset_index(drop=True)


def _regimes(frame: pd.DataFrame) -> pd.Series:
    """Each trial's semantics: recorded with its spec, else its parameter; a trial with neither but with a
    framework ran before regimes existed, under the canonical formulas; one without a framework has none."""
    regime = frame["semantics"] if "semantics" in frame else pd.Series(None, index=frame.index, dtype=object)
    if PARAM + "semantics" in frame:
        regime = regime.where(regime.notna(), frame[PARAM + "semantics"])
    regime = regime.where(regime.notna(), "canonical").astype(str)
    return regime.where(frame["framework"].notna(), None)


UNFRAMED = ("not a sensitivity study: no framework recorded (a study another program wrote?), so no framework, "
            "regime or comparison is shown; sensitivity importance STUDY gives fANOVA and PED-ANOVA of its "
            "parameters on its own objective")


def unframed(table: pd.DataFrame) -> bool:
    """`table` has trials and none records a framework (nor so a regime): a study another program wrote. An empty
    study is not one: it has nothing to say yet."""
    return len(table) > 0 and ("framework" not in table or not table["framework"].notna().any())


def _outcomes(frame: pd.DataFrame) -> pd.Series:
    state = frame["state"].fillna("COMPLETE")
    status = frame["status"].fillna("ok")
    outcome = np.where(state == "PRUNED", "pruned", np.where(state == "FAIL", "failed", status))
    outcome = pd.Series(outcome, index=frame.index).where(lambda s: s.isin(OUTCOMES), "failed")
    return outcome.mask(outcome.eq("ok") & collapsed_mask(frame), "collapsed")


def classes_of(dataset) -> float:
    """The number of classes of a registered dataset; NaN for one the registry does not hold."""
    # lazy: the dataset registry, for its class counts
    from sensitivity.datasets import REGISTRY

    info = REGISTRY.get(dataset) if isinstance(dataset, str) else None
    return float(info.classes) if info is not None and info.classes > 1 else np.nan


def collapsed_mask(frame: pd.DataFrame) -> pd.Series:
    """Rows (with `dataset`, `loss`, `accuracy`) whose run did not train: final training loss within
    COLLAPSE_LOSS x ln(classes) of ln(classes), or test accuracy at most chance + COLLAPSE_ACCURACY. False where
    the dataset's classes are unknown or neither value was recorded."""
    datasets = frame["dataset"] if "dataset" in frame else pd.Series(None, index=frame.index, dtype=object)
    classes = datasets.map({d: classes_of(d) for d in datasets.dropna().unique()}).astype(float)
    loss = pd.to_numeric(frame["loss"], errors="coerce") if "loss" in frame else np.nan
    accuracy = pd.to_numeric(frame["accuracy"], errors="coerce") if "accuracy" in frame else np.nan
    uniform = np.log(classes)
    flat = (loss - uniform).abs() <= COLLAPSE_LOSS * uniform
    chance = accuracy <= 1.0 / classes + COLLAPSE_ACCURACY
    return (flat | chance).fillna(False).astype(bool)


def _curve_texts(curves) -> list:
    return [_curve_text(curve) for curve in curves]


def _curve_text(curve) -> str:
    """A curve as JSON text: a text as it is, a list (a frame made by hand) written, none as "[]"."""
    if isinstance(curve, str) and curve not in ("", "null"):
        return curve
    if isinstance(curve, (list, tuple, np.ndarray)):
        return json.dumps(list(curve))
    return "[]"


def parse_curves(texts) -> list:
    """The curves of a `curve` column as lists of per-epoch dicts, parsed in one call: faster than one per
    curve, and json shares the epochs' keys (one string each) within a call."""
    with paused_collection():
        return parse_json(f"[{','.join(texts)}]")


@contextlib.contextmanager
def paused_collection():
    """Python's cycle collector paused while a bulk read builds millions of objects, none in a cycle (records,
    parsed JSON): each collection their allocations trigger would traverse every object alive. Objects are
    freed by their reference counts as ever; the collector runs again after, as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_DERIVED: dict = {}


def derived(table: pd.DataFrame, compute):
    """`compute(table)`, computed once per table object: the report and its findings both ask for the same
    frontier of the same table. Kept while the table lives; a table is never changed in place once made."""
    key = (id(table), compute)
    hit = _DERIVED.get(key)
    if hit is not None and hit[0]() is table:
        return hit[1]
    value = compute(table)
    _DERIVED[key] = (weakref.ref(table, lambda _, key=key: _DERIVED.pop(key, None)), value)
    return value


# records read from the table itself, never from its slices
HEAVY_ATTRS = ("robustness", "robustness_protocol", "ablation")


def trained(table: pd.DataFrame) -> pd.DataFrame:
    """Trials that ran to a result: outcome ok, collapsed or diverged (Optuna COMPLETE). The slice keeps the table's
    attrs but its records (HEAVY_ATTRS): pandas deep-copies attrs at every operation, and robustness records
    made that the larger part of an analysis's time. Made once per table (`derived`: a report's sections ask
    for it a dozen times), so never changed in place: its callers filter, assign or copy it."""
    return derived(table, _trained)


def _trained(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[table["outcome"].isin(TRAINED)]
    rows.attrs = {k: v for k, v in table.attrs.items() if k not in HEAVY_ATTRS}
    return rows


def has_defaults(table: pd.DataFrame) -> bool:
    return "is_default" in table and bool(table["is_default"].any())


def planned_of(table: pd.DataFrame) -> pd.Series:
    """Boolean mask of planned trials (framework defaults, their transfers, any configuration queued whole):
    not samples from the search space, so kept out of what describes the space (importance)."""
    mask = defaults_of(table)
    for column in ("planned", "default"):
        if column in table:
            mask = mask | (table[column].notna() & table[column].ne(False))
    return mask


def defaults_of(table: pd.DataFrame) -> pd.Series:
    """Boolean mask of framework default configurations (all False without an `is_default` column)."""
    return table["is_default"].eq(True) if "is_default" in table else pd.Series(False, index=table.index)


def parameter_names(table: pd.DataFrame, framework: bool = True) -> list:
    """The study's parameters, the framework first; without `framework`, neither the framework nor the
    regime (`semantics`), the keys analyses group by rather than vary over."""
    names = [c[len(PARAM):] for c in table.columns if c.startswith(PARAM)]
    names = sorted(names, key=lambda n: (n != "framework", n != REGIME, n))
    return names if framework else [n for n in names if n not in BY_FRAMEWORK]


def grouped(rows: pd.DataFrame, keys=BY_FRAMEWORK, *, outcomes: bool = False, **aggregations) -> pd.DataFrame:
    """One row per group of `keys` with `n_trials` and `n_seeds` (distinct seeds), then `aggregations`
    (pandas named aggregations, name=(column, function)); `outcomes` adds n_ok, n_collapsed,
    n_diverged, n_pruned, n_failed. The one grouping every analysis uses, so counts mean the same everywhere;
    sorted by the keys, native before canonical."""
    keys = list(keys)
    out = rows.groupby(keys, sort=True, observed=True).agg(
        n_trials=("number", "size"), n_seeds=("seed", "nunique"), **aggregations)
    if outcomes:
        counts = rows.groupby(keys + ["outcome"], observed=True).size().unstack("outcome", fill_value=0)
        counts = counts.reindex(columns=list(OUTCOMES), fill_value=0).add_prefix("n_")
        out = out.join(counts).fillna({f"n_{o}": 0 for o in OUTCOMES})
        out[[f"n_{o}" for o in OUTCOMES]] = out[[f"n_{o}" for o in OUTCOMES]].astype(int)
    return regime_sorted(out.reset_index(), keys)


def regime_position(regime) -> int:
    """Where a regime sorts: native, canonical, then any other name."""
    return REGIMES.index(regime) if regime in REGIMES else len(REGIMES)


def regime_sorted(frame: pd.DataFrame, keys) -> pd.DataFrame:
    """`frame` sorted by `keys`, the regime native first."""
    keys = [k for k in keys if k in frame]
    if not keys or frame.empty:
        return frame.reset_index(drop=True)
    return frame.sort_values(keys, key=lambda c: _regime_positions(c) if c.name == REGIME else c,
                             kind="stable", ignore_index=True)


def _regime_positions(regimes: pd.Series) -> pd.Series:
    """Each row's `regime_position`, computed once per distinct regime (missing: last, as any other name)."""
    return regimes.map({r: regime_position(r) for r in regimes.dropna().unique()}).fillna(len(REGIMES))


def regimes_of(rows: pd.DataFrame) -> list:
    """The regimes present in `rows`, native first."""
    present = rows[REGIME].dropna().unique().tolist() if REGIME in rows else []
    return sorted(present, key=lambda r: (regime_position(r), str(r)))


def regime_note(rows: pd.DataFrame) -> str:
    """What a section says of the regimes its numbers come from: "Regime: native", or "Regimes: native and
    canonical, kept apart"."""
    regimes = regimes_of(rows)
    if len(regimes) < 2:
        return f"Regime: {regimes[0] if regimes else 'none (no rows)'}"
    return f"Regimes: {', '.join(regimes[:-1])} and {regimes[-1]}, kept apart"
