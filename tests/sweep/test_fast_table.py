"""The bulk reader of RDB studies (sensitivity.studies.trial_rows) gives the same trial table as Optuna's own
objects, on SQLite and on a real PostgreSQL; synthetic studies read back through plain Optuna; the cached
copy of a study's trials is used while the study is unchanged, and only then."""
import json
import math
import os
import uuid

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from sensitivity.analysis.table import parse_curves, trials_table
from benchmarks import synthetic
from sensitivity.studies import trial_rows
from sensitivity.studies import catalog
from sensitivity.studies.storage import StorageError, open_storage
from sensitivity.studies.catalog import trials_frame

POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")
RDB = ["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not POSTGRES and os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") != "1",
    reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)"))]


@pytest.fixture(params=RDB)
def storage_url(request, tmp_path):
    return f"sqlite:///{tmp_path}/s.db" if request.param == "sqlite" else POSTGRES


@pytest.fixture
def study_name(storage_url):
    name = f"fast-{uuid.uuid4().hex[:8]}"
    yield name
    try:
        optuna.delete_study(study_name=name, storage=storage_url)
    except KeyError:
        pass


def through_optuna(study, monkeypatch):
    """The table as Optuna's FrozenTrials give it (the path of journal and in-memory storages)."""
    with monkeypatch.context() as m:
        m.setenv("SENSITIVITY_TRIAL_CACHE", "off")
        m.setattr(trial_rows, "_from_rdb", lambda engine, study_id, keys, texts, system_keys=False: [
            trial_rows._from_frozen(t, keys, texts, system_keys) for t in study.get_trials(deepcopy=False)])
        return trials_table(study), trials_frame(study)


def assert_same(study, monkeypatch):
    fast, fast_frame = trials_table(study), trials_frame(study)
    slow, slow_frame = through_optuna(study, monkeypatch)
    pd.testing.assert_frame_equal(fast, slow)
    pd.testing.assert_frame_equal(fast_frame, slow_frame)
    assert fast.attrs == slow.attrs
    return fast


def test_every_kind_of_trial_reads_the_same(storage_url, study_name, monkeypatch):
    study = optuna.create_study(study_name=study_name, storage=open_storage(storage_url),
                                directions=["maximize", "minimize"])
    study.set_user_attr("space", {"dataset": "digits"})
    dists = {"framework": CategoricalDistribution(["torch", "jax"]), "lr": FloatDistribution(1e-4, 1, log=True),
             "batch_size": CategoricalDistribution([32, 64]), "epochs": IntDistribution(1, 5),
             "flag": CategoricalDistribution([True, False, None])}
    for i, (state, values) in enumerate([(TrialState.COMPLETE, [0.9, 12.5]), (TrialState.COMPLETE, [0.1, math.inf]),
                                         (TrialState.FAIL, None), (TrialState.PRUNED, None),
                                         (TrialState.RUNNING, None), (TrialState.COMPLETE, [0.5, -math.inf])]):
        trial = study.ask(dists)
        trial.set_user_attr("status", {TrialState.FAIL: "failed", TrialState.PRUNED: "pruned"}.get(state, "ok"))
        trial.set_user_attr("seed", i % 2)
        trial.set_user_attr("curve", [{"epoch": 1, "val_accuracy": 0.5 + i / 100}])
        trial.set_user_attr("env", {"framework_version": "1.0", "python": "3.11", "semantics": {"regime": "native"}})
        trial.set_user_attr("spec", {"semantics": "canonical" if i == 1 else "native"})
        trial.set_user_attr("stderr_tail", "x" * 500)
        trial.set_user_attr("loss", {0: math.inf, 3: math.nan, 5: 10 ** 30}.get(i, 0.25))  # beyond strict JSON
        if i == 2:
            trial.set_user_attr("orphaned", True)
        if state != TrialState.RUNNING:
            study.tell(trial, values, state=None if values else state)
    study.enqueue_trial({"framework": "jax"}, user_attrs={"seed": 1})  # WAITING
    table = assert_same(study, monkeypatch)
    records = trial_rows.trial_records(study, system_keys=True)  # each start, and the queue's system attribute
    assert records == [trial_rows._from_frozen(t, None, (), True) for t in study.get_trials()]
    assert records[1].started is not None and records[-1].started is None and records[-1].system_keys
    assert sorted(table["number"]) == [0, 1, 3, 5]  # final trials, the orphan left out
    assert table.set_index("number").loc[1, "value_1"] == math.inf
    assert table.set_index("number").loc[1, "semantics"] == "canonical"
    assert "stderr_tail" not in table
    assert table["loss"].map(repr).tolist() == ["inf", "0.25", "nan", "1e+30"]


def test_json_that_orjson_refuses_is_read_as_python_writes_it():
    text = json.dumps([math.nan, -math.inf, 10 ** 30, "\ud800", {"a": [1.5, None, True]}])
    parsed = trial_rows.parse_json(text)
    assert repr(parsed) == repr(json.loads(text)) and math.isnan(parsed[0])
    assert trial_rows.parse_json('[1.5, {"b": "c"}]') == [1.5, {"b": "c"}]
    with pytest.raises(ValueError):
        trial_rows.parse_json("[1,")


def test_listing_showing_and_a_missing_name_build_no_trial_through_optuna(storage_url, study_name, monkeypatch):
    """`studies list`, `studies show` and the refusal of a name not stored read the trials in bulk, and say
    what Optuna's objects say: its study summaries and `best_trials` built every trial of every study through
    its ORM, 14 s at 10,000 trials, for a typo in a study's name too."""
    study = optuna.create_study(study_name=study_name, storage=open_storage(storage_url), direction="maximize")
    for value in (0.5, 0.9, 0.2, 0.9):  # two trials share the best value: both are the best
        study.tell(study.ask({"lr": FloatDistribution(1e-4, 1, log=True)}), value)
    orphan = study.ask()
    orphan.set_user_attr("orphaned", True)
    study.tell(orphan, state=TrialState.FAIL)
    study.ask()  # running
    best = ", ".join(f"#{t.number} {t.params} -> {t.values}" for t in study.best_trials)
    started = min(t.datetime_start for t in study.get_trials()).isoformat(" ", "seconds")
    built, build = [], FrozenTrial.__init__
    monkeypatch.setattr(FrozenTrial, "__init__", lambda self, *args, **kw: built.append(1) or build(self, *args, **kw))
    row, = [r for r in catalog.list_studies(storage_url) if r["study"] == study_name]
    assert row == {"study": study_name, "trials": 6, "final": 4, "directions": "maximize", "started": started}
    shown = catalog.show(catalog.load(study_name, storage_url)).splitlines()
    assert shown[0] == f"study {study_name}: 6 trials, 4 final" and shown[-1] == f"best trial: {best}"
    assert best.count("#") == 2
    with pytest.raises(StorageError, match=f"^no study 'nope' in this storage; studies: .*{study_name}"):
        catalog.load("nope", storage_url)
    assert built == []


def test_the_best_trials_shown_are_optunas_for_several_objectives_and_constraints(storage_url, study_name,
                                                                                   monkeypatch):
    """`studies show` finds the Pareto set in the records as Optuna's `best_trials` does (duplicates and ties
    kept, infinities, three objectives), building no trial through Optuna's ORM; with constraints it asks Optuna,
    which keeps the feasible only."""
    rng = np.random.default_rng(0)
    storage = open_storage(storage_url)
    for suffix, directions in (("two", ["maximize", "minimize"]), ("three", ["minimize", "minimize", "maximize"])):
        study = optuna.create_study(study_name=f"{study_name}-{suffix}", storage=storage, directions=directions)
        for _ in range(120):
            values = list(np.round(rng.random(len(directions)), 1))  # a grid of 11 levels: many ties
            values[0] = math.inf if rng.random() < 0.05 else values[0]
            study.tell(study.ask({"x": FloatDistribution(0, 1)}), values)
        study.tell(study.ask(), state=TrialState.FAIL)
        expected = [t.number for t in study.best_trials]
        study = optuna.load_study(study_name=study.study_name, storage=storage_url)  # nothing read yet
        built, build = [], FrozenTrial.__init__
        with monkeypatch.context() as m:
            m.setattr(FrozenTrial, "__init__", lambda self, *args, **kw: built.append(1) or build(self, *args, **kw))
            found = catalog._best(study, trial_rows.trial_records(study, system_keys=True))
        assert [t.number for t in found] == expected and len(expected) > 1 and built == []
    constrained = optuna.create_study(study_name=f"{study_name}-constrained", storage=storage, direction="maximize")
    for _ in range(20):
        trial = constrained.ask()
        x = trial.suggest_float("x", 0, 1)
        trial.set_constraint("c", x - 0.3)  # feasible where x <= 0.3
        constrained.tell(trial, x)
    best = catalog._best(constrained, trial_rows.trial_records(constrained, system_keys=True))
    assert [t.number for t in best] == [t.number for t in constrained.best_trials] and best[0].params["x"] <= 0.3
    for name in (f"{study_name}-two", f"{study_name}-three", f"{study_name}-constrained"):
        optuna.delete_study(study_name=name, storage=storage_url)


def test_a_synthetic_study_reads_back_through_plain_optuna(storage_url, study_name, monkeypatch):
    assert synthetic.write_study(storage_url, study_name, 40) == 40
    study = optuna.load_study(study_name=study_name, storage=storage_url)
    trials = study.get_trials()
    assert [t.number for t in trials] == list(range(40))
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    assert done and all(len(t.intermediate_values) == synthetic.EPOCHS and t.values == [t.user_attrs["val_accuracy"]]
                        for t in done)
    assert {"curve", "env", "spec", "stderr_tail", "config_id", "driver"} <= set(trials[0].user_attrs)
    assert trials[0].user_attrs["is_default"] and trials[0].params["framework"] == "torch"
    assert study.best_trial.value == max(t.value for t in done)
    table = assert_same(study, monkeypatch)
    assert len(table) == 40 and max(map(len, parse_curves(table["curve"]))) == synthetic.EPOCHS
    # the curves' JSON texts stay the Python strings read (not copied into Arrow and back), in the frame and table
    frame = trials_frame(study)
    assert frame["curve"].dtype == object and table["curve"].dtype == object
    assert list(frame["curve"]) == [json.dumps(t.user_attrs["curve"]) for t in trials]
    assert synthetic.write_study(storage_url, study_name, 10) == 50  # appends, numbered on


def test_the_cached_trials_serve_an_unchanged_study_only(storage_url, study_name, monkeypatch):
    synthetic.write_study(storage_url, study_name, 12)
    study = optuna.load_study(study_name=study_name, storage=storage_url)
    first = trials_table(study)
    with monkeypatch.context() as m:
        m.setattr(trial_rows, "_from_rdb", lambda *args: pytest.fail("read again though unchanged"))
        pd.testing.assert_frame_equal(trials_table(study), first)
    trial = study.ask()  # a running trial: not in the table, its attributes written in place while it runs
    trial.set_user_attr("status", "ok")
    running = trials_table(study)  # read again: a trial was added
    assert running["number"].tolist() == first["number"].tolist()
    trial.set_user_attr("status", "diverged")
    with monkeypatch.context() as m:
        m.setattr(trial_rows, "_from_rdb", lambda *args: pytest.fail("read again though no trial finished"))
        pd.testing.assert_frame_equal(trials_table(study), running)
    study.tell(trial, 0.5)
    changed = trials_table(study)
    assert len(changed) == 13 and changed.set_index("number").loc[12, "outcome"] == "diverged"
    with pytest.raises(RuntimeError, match="finished"):  # a finished trial never changes: the key reads no attribute
        study._storage.set_trial_user_attr(study.trials[3]._trial_id, "status", "diverged")
    study.set_user_attr("robustness:0", {"white": 0.5})  # study attributes are read afresh, never cached
    assert trials_table(study).attrs["robustness"] == {0: {"white": 0.5}}


def test_the_cache_holds_the_normalised_table_with_equal_records_shared(storage_url, study_name, monkeypatch):
    from sensitivity.analysis import table as table_module

    synthetic.write_study(storage_url, study_name, 30)
    study = optuna.load_study(study_name=study_name, storage=storage_url)
    first = trials_table(study)
    with monkeypatch.context() as m:
        m.setattr(table_module, "_normalise", lambda frame: pytest.fail("normalised again though cached"))
        cached = trials_table(study)
    pd.testing.assert_frame_equal(cached, first)
    records = [r for r in cached["env_semantics"] if isinstance(r, dict)]
    assert len(records) == 30 and len({id(r) for r in records}) == len({repr(r) for r in records}) < 30
    assert all(isinstance(point, dict) for curve in parse_curves(cached["curve"]) for point in curve)


def test_a_parameter_that_later_trials_add_comes_after_the_common_columns(tmp_path):
    """The frame's columns in the order a dict per trial gives them: the first trial's (its parameters, the results,
    the curve), then the parameters that later trials add."""
    study = optuna.create_study(storage=f"sqlite:///{tmp_path}/c.db", study_name="c")
    study.optimize(lambda t: t.suggest_float("a", 0, 1) + (t.suggest_float("b", 0, 1) if t.number else 0), n_trials=2)
    columns = list(trials_frame(study).columns)
    assert columns[:5] == ["number", "state", "duration_s", "value_0", "param_a"]
    assert columns[-2:] == ["curve", "param_b"] and columns.index("status") == 5
