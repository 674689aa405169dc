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
