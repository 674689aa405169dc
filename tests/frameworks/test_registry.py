"""The registries: every framework entry loads here or says which extra installs it; names agree."""
import pytest

from sensitivity import datasets, frameworks
from sensitivity.core import models
from sensitivity.frameworks.base import Adapter

PROTOCOL = [name for name in dir(Adapter) if not name.startswith("_")]


@pytest.mark.parametrize("name", sorted(frameworks.FRAMEWORKS))
def test_entry_loads_or_names_its_extra(name):
    info = frameworks.FRAMEWORKS[name]
    assert info.env in ("modern", "legacy")
    if frameworks.importable(name):
        adapter = frameworks.load_adapter(name)
        assert adapter.name == name
        missing = [member for member in PROTOCOL if not hasattr(adapter, member)]
        assert not missing, f"{name} adapter lacks {missing}"
    else:
        with pytest.raises(frameworks.FrameworkUnavailable, match=rf"sensitivity\[{info.extra}\]"):
            frameworks.load_adapter(name)


def test_every_dataset_default_model_exists():
    for info in datasets.REGISTRY.values():
        assert info.default_model in models.MODELS


def test_backends_only_where_declared():
    from sensitivity.core.spec import TrialSpec
    assert frameworks.worker_variables(TrialSpec(framework="keras", dataset="digits")) == {"KERAS_BACKEND": "tensorflow"}
    assert frameworks.worker_variables(TrialSpec(framework="keras", backend="jax", dataset="digits")) == {"KERAS_BACKEND": "jax"}
    with pytest.raises(ValueError, match="allowed tensorflow, jax, torch"):
        frameworks.worker_variables(TrialSpec(framework="keras", backend="mxnet", dataset="digits"))
    assert frameworks.worker_variables(TrialSpec(framework="torch", dataset="digits")) == {}


def test_tensorflow_workers_pin_keras_to_its_tensorflow_backend():
    """tensorflow's native optimizers are tf.keras's: a KERAS_BACKEND the user exported must not reach them."""
    from sensitivity.core.spec import TrialSpec
    assert frameworks.worker_variables(TrialSpec(framework="tensorflow", dataset="digits")) == \
        {"KERAS_BACKEND": "tensorflow"}
    assert frameworks.worker_variables(TrialSpec(framework="torch", dataset="digits")) == {}
