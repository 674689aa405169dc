"""The windowed TPE sampler models only the most recent finished trials."""
import optuna
import pytest

from sensitivity.sweep.windowed_tpe import WindowedTPESampler

optuna.logging.set_verbosity(optuna.logging.WARNING)


def study_with_history(sampler):
    """60 finished trials: the 40 oldest best near x=0, the 20 newest worse and near x=1."""
    study = optuna.create_study(direction="maximize", sampler=sampler)
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    for i in range(60):
        x, value = (0.001 * i, 1.0) if i < 40 else (0.9 + 0.005 * (i - 40), 0.1 * (i - 40) / 20)
        study.add_trial(optuna.trial.create_trial(params={"x": x}, distributions=dist, value=value))
    return study, dist


@pytest.mark.parametrize("window, near_one", [(20, True), (1000, False)])
def test_tpe_models_only_the_window_of_recent_trials(window, near_one):
    study, dist = study_with_history(WindowedTPESampler(seed=0, multivariate=True, n_startup_trials=5, window=window))
    asked = [study.ask(dist).params["x"] for _ in range(8)]
    assert (sum(asked) / len(asked) > 0.5) is near_one  # the window's best lie near 1, the study's near 0


def test_the_default_sampler_is_the_windowed_tpe():
    from sensitivity.sweep.samplers import make_sampler
    from sensitivity.sweep.windowed_tpe import WINDOW
    sampler = make_sampler("tpe", None, 0)
    assert isinstance(sampler, WindowedTPESampler) and sampler.window == WINDOW


def test_running_trials_join_the_window_without_taking_the_finished_trials_places():
    """TPE's constant liar (Optuna's default) models running trials as pending: with more running than the
    window holds, the model still sees `window` finished trials, and the running ones beside them."""
    from optuna.trial import TrialState
    sampler = WindowedTPESampler(seed=0, multivariate=True, n_startup_trials=5, window=20)
    study, dist = study_with_history(sampler)
    running = [study.ask(dist) for _ in range(30)]
    seen = sampler.view(study)._get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING))
    assert [t.number for t in seen] == list(range(40, 60)) + [t.number for t in running]


@pytest.mark.parametrize("multivariate", [True, False])
def test_below_the_window_the_sampler_is_optunas_tpe_with_trials_running_pruned_and_failed(multivariate):
    """The same seed gives the same parameters as Optuna's TPESampler, ask for ask, while trials run, are
    pruned and fail in between, and while some are defined by run (the internal values it keeps per trial
    are Optuna's, a running trial's only once it holds them all)."""
    import random

    from optuna.trial import TrialState

    def suggest(trial):
        return {"x": trial.suggest_float("x", 1e-4, 1, log=True), "y": trial.suggest_int("y", 1, 64, log=True),
                "c": trial.suggest_categorical("c", ["sgd", "adam", "rms"])}

    def asked(sampler):
        study, rng, live, params, late = optuna.create_study(sampler=sampler), random.Random(0), [], [], []
        for number in range(80):
            trial = study.ask()
            if number % 7 == 3:  # its parameters come after the next ask has seen it without them
                late.append(trial)
                continue
            params.extend(suggest(t) for t in [trial, *late])
            live.extend([trial, *late])
            late = []
            if len(live) > 12 or rng.random() < 0.4:
                done = live.pop(rng.randrange(len(live)))
                if done.number % 9 == 4:
                    study.tell(done, state=TrialState.PRUNED)
                elif done.number % 11 == 5:
                    study.tell(done, state=TrialState.FAIL)
                else:
                    study.tell(done, done.params["x"] * done.params["y"] + len(done.params["c"]))
        return params

    optunas = asked(optuna.samplers.TPESampler(seed=1, multivariate=multivariate, n_startup_trials=5))
    assert asked(WindowedTPESampler(seed=1, multivariate=multivariate, n_startup_trials=5, window=10**6)) == optunas
