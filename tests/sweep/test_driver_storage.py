"""The driver's storage view (`DriverStorage`): what it writes is what plain Optuna reads, it does not read
again the trials it runs, it sees other processes' trials and the queue, and a trial another driver
finished is not written over. SQLite always; PostgreSQL when SENSITIVITY_TEST_POSTGRES_URL is set."""
import os
import uuid

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import TrialState

from sensitivity.sweep import driver_storage
from sensitivity.sweep.driver_storage import NOT_CACHED, DriverStorage, driver_view
from sensitivity.studies.storage import open_storage

POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")
DISTRIBUTIONS = {"lr": FloatDistribution(1e-4, 0.3, log=True), "batch_size": CategoricalDistribution([32, 64])}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.skipif(
    not POSTGRES, reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)"))])
def url(request, tmp_path):
    return f"sqlite:///{tmp_path}/s.db" if request.param == "sqlite" else POSTGRES


@pytest.fixture(autouse=True)
def no_timed_flush(monkeypatch):
    """Held writes are written only when the test says (flush, a final state): no flush on a clock."""
    monkeypatch.setattr(driver_storage, "FLUSH_EVERY_S", 1e9)


def studies(url):
    """(a study through DriverStorage, the same study through plain Optuna: another process's view)."""
    name = f"d-{uuid.uuid4().hex[:8]}"
    storage = driver_view(open_storage(url))
    assert isinstance(storage, DriverStorage)
    driver = optuna.create_study(study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    return driver, optuna.load_study(study_name=name, storage=open_storage(url))


def fields(trial, without=()) -> list:
    """What a trial holds, less the user attributes `without`."""
    return [trial.number, trial.state, trial.values, trial.params, trial.distributions,
            {k: v for k, v in trial.user_attrs.items() if k not in without}, trial.system_attrs,
            trial.datetime_start, trial.datetime_complete, trial._trial_id]


def plain(study, number):
    """Trial `number` as a fresh plain-Optuna read sees it."""
    return optuna.load_study(study_name=study.study_name, storage=open_storage(study._storage.url)).trials[number]


def run_trial(study, value=0.5, epochs=3):
    trial = study.ask(DISTRIBUTIONS)
    trial.set_user_attr("driver", "me")
    trial.set_user_attr("spec", {"framework": "torch", "lr": trial.params["lr"]})
    driver_storage.flush(study)
    for epoch in range(1, epochs + 1):
        trial.report(value * epoch / epochs, step=epoch)
    trial.set_user_attr("curve", [{"epoch": e} for e in range(1, epochs + 1)])
    study.tell(trial, value)
    return trial


def test_what_the_driver_writes_is_what_plain_optuna_reads(url):
    driver, _ = studies(url)
    driver.enqueue_trial({"lr": 0.01, "batch_size": 64}, user_attrs={"seed": 1})
    for value in (0.3, 0.6, 0.9):
        run_trial(driver, value)
    failed = driver.ask(DISTRIBUTIONS)
    failed.set_user_attr("reason", "diverged")
    driver.tell(failed, state=TrialState.FAIL)
    mine = driver.get_trials()
    theirs = optuna.load_study(study_name=driver.study_name, storage=open_storage(url)).get_trials()
    assert [fields(t) for t in mine] == [fields(t, without=NOT_CACHED) for t in theirs]
    assert theirs[1].user_attrs["spec"]["framework"] == "torch" and "spec" not in mine[1].user_attrs  # not cached
    assert theirs[0].params["lr"] == 0.01 and theirs[0].user_attrs["seed"] == 1  # the queued trial, popped
    assert [t.state for t in theirs] == [TrialState.COMPLETE] * 3 + [TrialState.FAIL]
    assert theirs[2].intermediate_values == {1: 0.3, 2: 0.6, 3: 0.9} and theirs[2].user_attrs["curve"][-1] == {"epoch": 3}
    assert [t.intermediate_values for t in mine] == [t.intermediate_values for t in theirs]


def test_held_writes_reach_the_storage_at_the_flush_and_with_the_final_state(url):
    driver, _ = studies(url)
    run_trial(driver)  # the first parameter of each name is checked against the study, and written at once
    trial = driver.ask(DISTRIBUTIONS)
    trial.set_user_attr("driver", "me")
    assert plain(driver, 1).params == {} and "driver" not in plain(driver, 1).user_attrs  # held
    driver_storage.flush(driver)
    stored = plain(driver, 1)
    assert stored.state == TrialState.RUNNING and stored.params == trial.params and stored.user_attrs == {"driver": "me"}
    trial.report(0.4, step=1)
    trial.set_user_attr("accuracy", 0.41)
    assert plain(driver, 1).intermediate_values == {}
    driver.tell(trial, 0.4)  # the held writes and the state in one transaction
    stored = plain(driver, 1)
    assert (stored.state, stored.value, stored.intermediate_values, stored.user_attrs["accuracy"]) == \
        (TrialState.COMPLETE, 0.4, {1: 0.4}, 0.41)


def test_intermediate_values_are_written_once_a_second_without_a_flush(url, monkeypatch):
    driver, _ = studies(url)
    trial = driver.ask(DISTRIBUTIONS)
    driver_storage.flush(driver)
    monkeypatch.setattr(driver_storage, "FLUSH_EVERY_S", 0.0)  # every write is due
    trial.report(0.2, step=1)
    assert plain(driver, 0).intermediate_values == {1: 0.2}


def test_an_ask_reads_none_of_the_trials_the_driver_runs(url, monkeypatch):
    driver, _ = studies(url)
    running = [driver.ask(DISTRIBUTIONS) for _ in range(20)]
    driver_storage.flush(driver)
    read = []
    build = driver._storage._build
    monkeypatch.setattr(driver._storage, "_build", lambda rows, parts: read.extend(r.number for r in rows) or
                        build(rows, parts))
    for trial in running[:5]:
        driver.tell(trial, 0.5)
    driver.ask(DISTRIBUTIONS)
    assert read == []  # Optuna's cache would have read the 15 running trials again, twice
    run_trial(optuna.load_study(study_name=driver.study_name, storage=open_storage(url)))  # another process's
    driver.ask(DISTRIBUTIONS)
    assert read == [21]  # read once, whole
    assert len(driver.get_trials(states=(TrialState.RUNNING,))) == 17


def test_other_processes_trials_and_the_queue_are_seen(url):
    driver, other = studies(url)
    run_trial(driver)
    theirs = other.ask(DISTRIBUTIONS)
    other.enqueue_trial({"lr": 0.02, "batch_size": 32}, user_attrs={"seed": 7})
    assert [t.state for t in driver.get_trials()] == [TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING]
    other.tell(theirs, 0.8)
    assert driver.get_trials()[1].state == TrialState.COMPLETE and driver.get_trials()[1].value == 0.8
    popped = other.ask()  # the other process takes the queued trial: the driver does not take it again
    assert popped.params == {} and popped.number == 2
    mine = driver.ask(DISTRIBUTIONS)
    assert mine.number == 3 and "seed" not in mine.user_attrs
    assert [t.number for t in driver.get_trials(states=(TrialState.WAITING,))] == []


def test_a_trial_another_driver_finished_is_not_written_over(url):
    driver, other = studies(url)
    trial = driver.ask(DISTRIBUTIONS)
    driver_storage.flush(driver)
    other._storage.set_trial_user_attr(trial._trial_id, "orphaned", True)
    other._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # thought this driver dead
    trial.set_user_attr("accuracy", 0.9)
    with pytest.raises(UpdateFinishedTrialError):
        driver.tell(trial, 0.9)
    stored = plain(driver, 0)
    assert stored.state == TrialState.FAIL and "accuracy" not in stored.user_attrs and stored.user_attrs["orphaned"]
    assert driver.get_trials()[0].state == TrialState.FAIL  # read again


def test_trials_come_sorted_by_number_whatever_order_they_arrive_in(url):
    driver, other = studies(url)
    mine = [driver.ask(DISTRIBUTIONS) for _ in range(3)]
    driver.get_trials()
    theirs = [other.ask(DISTRIBUTIONS) for _ in range(3)]
    driver.tell(mine[1], 0.1)
    other.tell(theirs[2], 0.2)
    assert [t.number for t in driver.get_trials()] == list(range(6))
    assert [t.number for t in driver.get_trials(states=(TrialState.RUNNING,))] == [0, 2, 3, 4]


def test_other_storages_are_left_as_they_are(tmp_path):
    journal = open_storage(f"journal:{tmp_path}/s.journal")
    assert driver_view(journal) is journal


def test_a_study_read_by_the_driver_is_the_study_plain_optuna_reads(url):
    """The driver reads by SQL, not through Optuna's ORM objects: every field of every kind of trial the same."""
    _, other = studies(url)
    for value in (0.5, float("inf"), float("-inf")):
        trial = other.ask(DISTRIBUTIONS)
        trial.report(float("nan"), step=1)
        trial.report(value, step=2)
        trial.set_user_attr("env", {"host": "h", "threads": 1})
        trial.set_user_attr("curve", [{"epoch": 1}])
        trial.storage.set_trial_system_attr(trial._trial_id, "note", [1, "two"])
        other.tell(trial, value)
    pruned = other.ask(DISTRIBUTIONS)
    pruned.report(0.1, step=1)
    other.tell(pruned, state=TrialState.PRUNED)
    other.tell(other.ask(DISTRIBUTIONS), state=TrialState.FAIL)
    other.ask(DISTRIBUTIONS)  # running
    other.enqueue_trial({"lr": 0.01}, user_attrs={"seed": 3})
    storage = driver_view(open_storage(url))
    theirs = optuna.load_study(study_name=other.study_name, storage=open_storage(url)).get_trials()
    mine = optuna.load_study(study_name=other.study_name, storage=storage).get_trials()
    assert [fields(t) for t in mine] == [fields(t, without=NOT_CACHED) for t in theirs]
    nan_free = [{k: (v if v == v else "nan") for k, v in t.intermediate_values.items()} for t in mine]
    assert nan_free == [{k: (v if v == v else "nan") for k, v in t.intermediate_values.items()} for t in theirs]
    assert mine[0].user_attrs["env"] is mine[1].user_attrs["env"]  # equal values shared in memory


def test_a_trial_read_again_across_a_gap_in_the_numbers_is_listed_once(url):
    driver, other = studies(url)
    storage = driver._storage
    for _ in range(4):
        run_trial(other)
    listed = driver.get_trials()
    storage._studies[driver._study_id].trials.pop(2)  # as if trial 2 were not yet read
    storage._ordered[driver._study_id] = None
    assert [t.number for t in driver.get_trials()] == [0, 1, 3]
    storage._add_trials_to_cache(driver._study_id, [listed[3]])  # read again
    assert [t.number for t in driver.get_trials()] == [0, 1, 3]
    storage._add_trials_to_cache(driver._study_id, [listed[2]])
    assert [t.number for t in driver.get_trials()] == [0, 1, 2, 3]
