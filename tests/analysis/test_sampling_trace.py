"""How a study's trials were drawn: this tool's sweeps record their samplers, and a configuration run on several
seeds counts once when the family is inferred (a random sweep of 3 seeds a configuration read as model-based)."""
import optuna
import pytest

from sensitivity.analysis.rankings.sampling import INDEPENDENT, MODEL_BASED, sampling_of

optuna.logging.set_verbosity(optuna.logging.WARNING)


def random_study(seeds: int, samplers=None):
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    if samplers:
        study.set_user_attr("samplers", samplers)
    for _ in range(60):
        trial = study.ask({"lr": optuna.distributions.FloatDistribution(1e-4, 1.0, log=True),
                           "batch": optuna.distributions.IntDistribution(16, 256, log=True)})
        study.tell(trial, 0.5)
        for _ in range(seeds - 1):  # the same configuration on further seeds, as a sweep's siblings
            study.enqueue_trial(trial.params)
            sibling = study.ask({"lr": trial.distributions["lr"], "batch": trial.distributions["batch"]})
            study.tell(sibling, 0.5)
    return study


@pytest.mark.parametrize("seeds", [1, 3])
def test_a_random_sweep_is_inferred_independent_whatever_its_seeds(seeds):
    study = random_study(seeds)
    found = sampling_of(study, study.trials, ["lr", "batch"])
    assert found.family == INDEPENDENT and found.inferred, found.why


@pytest.mark.parametrize("samplers, family", [(["random"], INDEPENDENT), (["random", "tpe"], MODEL_BASED)])
def test_the_samplers_a_sweep_recorded_name_the_family(samplers, family):
    study = random_study(1, samplers)
    found = sampling_of(study, study.trials, ["lr", "batch"])
    assert found.family == family and not found.inferred and "its `samplers` attribute" in found.why
