"""Studies name their objectives, so that optuna-dashboard shows val_accuracy and train_time_s rather than
"Objective 0": the study is opened as a sweep opens it (no Ray, no trial), on a SQLite file."""
import optuna
import pytest

from sensitivity.config.spaces import Objective, load_space
from sensitivity.sweep.driver import SweepOptions, _open_study
from sensitivity.sweep.plans import defaults_space


@pytest.mark.parametrize("objectives", [
    ({"metric": "val_accuracy", "direction": "maximize"},),
    ({"metric": "val_accuracy", "direction": "maximize"}, {"metric": "train_time_s", "direction": "minimize"}),
])
def test_a_sweeps_study_names_its_objectives(tmp_path, objectives):
    space = load_space("search_spaces/mnist5k.yaml", frameworks=["torch"])
    space = space.model_copy(update={"objectives": tuple(Objective(**o) for o in objectives)})
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    _open_study(space, storage, SweepOptions(trials=1, study="named", sampler="random"))
    stored = optuna.load_study(study_name="named", storage=storage)
    assert stored.metric_names == [o["metric"] for o in objectives]
    _open_study(space, storage, SweepOptions(trials=1, study="named", sampler="random"))  # resumed: unchanged
    assert optuna.load_study(study_name="named", storage=storage).metric_names == [o["metric"] for o in objectives]


def test_a_defaults_study_names_its_objective(tmp_path):
    space = defaults_space("defaults", ["torch"], ["digits"], seeds=1)
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    _open_study(space, storage, SweepOptions(trials=1, sampler="random"))
    assert optuna.load_study(study_name="defaults", storage=storage).metric_names == ["val_accuracy"]
