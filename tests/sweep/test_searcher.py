"""The searcher against an in-memory study, without Ray running: what it tells Optuna in each case."""
import json
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sensitivity.config.spaces import Space, load_space
from sensitivity.sweep.dispatch import epoch_report
from sensitivity.sweep.searcher import StudySearch, StudySearcher
from sensitivity.sweep.tuning import scheduler

optuna.logging.set_verbosity(optuna.logging.WARNING)
REPO = Path(__file__).resolve().parents[2]


def space(seeds=1, batch_choices=(32, 64)):
    return Space.model_validate({
        "study": "u", "dataset": "digits", "model": "mlp", "frameworks": ["torch"], "seeds": seeds,
        "parameters": {"lr": {"type": "float", "low": 0.01, "high": 0.3, "log": True},
                       "batch_size": {"type": "categorical", "choices": list(batch_choices)}},
        "fixed": {"epochs": 3}, "objectives": [{"metric": "val_accuracy", "direction": "maximize"}]})


def searcher(target=3, pruning=False, **kw):
    s = space(**kw)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    return StudySearcher(study, s, "me", target, {"timeout": None, "threads": 1}, pruning=pruning)


def epoch(n, value=0.5):
    """Epoch n's report as the trainable makes it (`dispatch.epoch_report`): that epoch's point alone."""
    return {**epoch_report({"event": "epoch", "epoch": n, "train_loss": 1.0, "val_accuracy": value,
                            "test_accuracy": value - 0.01, "seconds": 0.1}, 0.1 * n), "ray_node_id": "n"}


def test_seed_siblings_are_not_queued_beyond_n():
    s = searcher(target=3, seeds=2)
    assert all(s.suggest(f"t{i}") for i in range(3))
    assert s.suggest("t3") is None  # N asked; nothing waits in the queue
    trials = s.study.get_trials()
    assert len(trials) == 3 and not [t for t in trials if t.state == TrialState.WAITING]
    groups = {}
    for t in trials:
        groups.setdefault(t.user_attrs["config_id"], []).append(t.user_attrs["seed"])
    assert sorted(sorted(g) for g in groups.values()) == [[0], [0, 1]]


def test_a_configuration_trialspec_refuses_is_told_fail_not_raised():
    s = searcher(target=2, batch_choices=("big",))
    assert s.suggest("t0") == "FINISHED"  # Searcher.FINISHED: both trials were told, none raised
    trials = s.study.get_trials()
    assert len(trials) == 2 and all(t.state == TrialState.FAIL for t in trials)
    assert all("configuration cannot run" in t.user_attrs["reason"] and "batch_size" in t.user_attrs["reason"]
               for t in trials)


def test_pruned_trial_keeps_the_last_reports_measurements():
    s = searcher(pruning=True)
    s.suggest("t0")
    s.on_trial_result("t0", epoch(1, 0.4))
    s.on_trial_complete("t0", result=epoch(2, 0.45))
    t = s.study.get_trials()[0]
    assert t.state == TrialState.PRUNED and t.value == 0.45 and sorted(t.intermediate_values) == [1, 2]
    assert t.user_attrs["status"] == "pruned" and len(t.user_attrs["curve"]) == 2
    assert t.user_attrs["val_accuracy"] == 0.45 and t.user_attrs["accuracy"] == pytest.approx(0.44)
    assert t.user_attrs["loss"] == 1.0 and t.user_attrs["train_time_s"] == pytest.approx(0.2)


def test_a_trial_whose_actor_died_keeps_the_epochs_it_reported():
    s = searcher()
    s.suggest("t0")
    for n in (1, 2):
        s.on_trial_result("t0", epoch(n, 0.3 + n / 10))
    s.on_trial_complete("t0", error=True)
    t = s.study.get_trials()[0]
    assert t.state == TrialState.FAIL
    assert [(p["epoch"], p["val_accuracy"], p["test_accuracy"]) for p in t.user_attrs["curve"]] == \
        [(1, 0.4, pytest.approx(0.39)), (2, 0.5, 0.49)]


def test_each_report_carries_its_own_epoch_alone():
    """A report's size does not grow with the epochs: epoch 2,000's is as long as epoch 2's (the curve is kept
    by the searcher, and comes whole once, in the final result)."""
    assert len(json.dumps(epoch(2_000))) <= len(json.dumps(epoch(2))) + 40  # digits, not 2,000 points
    assert json.loads(epoch(7)["point_json"]) == {"epoch": 7, "train_loss": 1.0, "val_accuracy": 0.5,
                                                   "test_accuracy": 0.49, "seconds": 0.1}


def test_a_trial_finished_by_another_driver_is_left_alone():
    s = searcher()
    s.suggest("t0")
    trial = s.live["t0"]
    s.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # another driver's recover()
    s.on_trial_result("t0", epoch(1))
    final = {**epoch(3), "final": True, "result_json": json.dumps({"status": "ok", "val_accuracy": 0.9})}
    s.on_trial_complete("t0", result=final)
    assert s.study.get_trials()[0].state == TrialState.FAIL and not s.live


def test_the_search_is_finished_while_its_last_trials_run_and_not_once_one_must_run_again():
    """Finished (Tune then keeps no idle actor for a next trial) once N are asked, their trials still live; a
    trial Tune dropped, queued again, makes it unfinished, and the next ask runs it."""
    s = searcher(target=2)
    search = StudySearch(s, parallel=2)
    search.add_configurations({"run": {"run": lambda config: None, "num_samples": 2 * 3}})  # as Tune does
    assert not search.is_finished()
    assert s.suggest("t0") and s.suggest("t1")
    assert search.is_finished() and len(s.live) == 2
    s.dropped("t1")
    assert not search.is_finished()
    again = s.suggest("t2")
    assert again and s.study.get_trials()[-1].user_attrs["retry_of"] == 1
    assert search.is_finished()
    s.shared = True  # another driver on the study: its counts are read at each ask, not assumed here
    assert not search.is_finished()


def test_live_trials_are_interrupted_and_requeued_when_the_run_ends():
    s = searcher()
    s.suggest("t0")
    s.suggest("t1")
    assert sorted(s.interrupt_live("interrupted: time budget of 5 s ran out")) == [0, 1]
    trials = s.study.get_trials()
    stopped = [t for t in trials if t.state == TrialState.FAIL]
    assert len(stopped) == 2 and all(t.user_attrs["orphaned"] and t.user_attrs["interrupted"] for t in stopped)
    assert all("time budget" in t.user_attrs["reason"] for t in stopped)
    waiting = [t for t in trials if t.state == TrialState.WAITING]
    assert sorted(t.user_attrs["retry_of"] for t in waiting) == [0, 1]
    assert s.open_slots() == 3  # interrupted trials do not count towards N


def test_a_non_final_result_without_a_pruner_is_an_interruption_not_pruned():
    s = searcher(pruning=False)
    s.suggest("t0")
    s.on_trial_complete("t0", result=epoch(1))
    t = s.study.get_trials()[0]
    assert t.state == TrialState.FAIL and t.user_attrs["interrupted"]


def test_hyperband_is_asynchronous_with_several_brackets():
    from ray.tune.schedulers import AsyncHyperBandScheduler  # stops trials, never pauses them
    hb, asha = scheduler("hyperband", space()), scheduler("asha", space())
    assert isinstance(hb, AsyncHyperBandScheduler) and len(hb._brackets) > 1 and len(asha._brackets) == 1


def test_asha_max_t_is_the_largest_epoch_count_of_the_space():
    body = space().model_dump(mode="json")
    tuned = {**body, "fixed": {}, "parameters": {**body["parameters"],
                                                 "epochs": {"type": "int", "low": 2, "high": 30}}}
    chosen = {**tuned, "parameters": {**body["parameters"], "epochs": {"type": "categorical", "choices": [12, 4]}}}
    steps = {**body, "fixed": {"iterations": 40}}
    assert [scheduler("asha", Space.model_validate(b))._max_t for b in (body, tuned, chosen, steps)] == [3, 30, 12, 40]


@pytest.mark.parametrize("path", sorted(p.name for p in (REPO / "search_spaces").glob("*.yaml")
                                        if p.name not in ("defaults.yaml", "robustness.yaml", "papers.yaml")))
def test_shipped_search_spaces_load(path):
    loaded = load_space(REPO / "search_spaces" / path)
    assert loaded.objectives and all(o.metric != "accuracy" for o in loaded.objectives)


class CountingStorage(optuna.storages.InMemoryStorage):
    """An in-memory storage that counts the reads of every trial (get_all_trials without a state filter)."""
    reads = 0

    def get_all_trials(self, study_id, deepcopy=True, states=None):
        self.reads += states is None
        return super().get_all_trials(study_id, deepcopy=deepcopy, states=states)


def test_an_ask_does_not_read_every_trial():
    storage = CountingStorage()
    study = optuna.create_study(storage=storage, direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    s = StudySearcher(study, space(seeds=2), "me", 200, {"timeout": None, "threads": 1})
    final = {**epoch(3, 0.9), "final": True, "result_json": json.dumps({"status": "ok", "val_accuracy": 0.9})}
    for i in range(50):
        assert s.suggest(f"t{i}")
        s.on_trial_complete(f"t{i}", result=final)
    assert storage.reads == 1  # the counts, once, at the first ask
    trials = study.get_trials()
    assert len(trials) == 50 and all(t.state == TrialState.COMPLETE for t in trials)  # each sibling ran
    assert len({t.user_attrs["config_id"] for t in trials}) == 25 and s.open_slots() == 150 and s.waiting == 0


def test_a_driver_sharing_the_study_counts_the_others_trials_and_tells_the_surplus():
    from sensitivity.studies.records import beat
    a = searcher(target=3)
    b = StudySearcher(optuna.load_study(study_name=a.study.study_name, storage=a.study._storage,
                                        sampler=optuna.samplers.RandomSampler(seed=1)),
                      a.space, "other", 3, {"timeout": None, "threads": 1})
    beat(a.study, "me"), beat(a.study, "other")
    assert a.suggest("a0") and a.suggest("a1")
    ask = a.study.ask

    def asked_meanwhile(*args):  # the other driver asks the 3rd trial between this one's count and its ask
        assert b.suggest("b0")
        return ask(*args)
    a.study.ask = asked_meanwhile
    assert a.suggest("a2") is None  # the 4th trial is a surplus, told FAIL before it ran
    trials = a.study.get_trials()
    assert [t.state for t in trials] == [TrialState.RUNNING] * 3 + [TrialState.FAIL]
    assert trials[3].user_attrs["surplus"] and a.open_slots() == 0 and b.suggest("b1") is None
