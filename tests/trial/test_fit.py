"""The driver's checks that a model and a batch size fit the dataset, before any worker starts. Portable."""
import numpy as np
import pytest

from sensitivity.core.spec import TrialSpec
from sensitivity.trial.fit import FitError, check_fit, models_that_fit

pytestmark = pytest.mark.portable

LABELS = np.repeat(np.arange(10), 10)  # 100 training samples, 10 per class


def test_models_that_fit_small_images_and_vectors():
    assert "lenet5" not in models_that_fit((1, 8, 8), 10) and "mlp" in models_that_fit((1, 8, 8), 10)
    assert models_that_fit((40,), 10) == ["mlp"]
    assert "lenet5" in models_that_fit((1, 28, 28), 10)


def test_inline_layers_that_do_not_fit_name_the_config():
    layers = ({"type": "Conv", "out_channels": 4, "kernel": 9}, {"type": "Flatten"}, {"type": "Dense", "units": 10})
    spec = TrialSpec(framework="torch", dataset="digits", layers=layers)
    with pytest.raises(FitError) as info:
        check_fit(spec, (1, 8, 8), 10, LABELS)
    assert info.value.option == "--config" and "layers" in str(info.value)


def test_batch_size_counts_the_samples_left_after_validation():
    spec = TrialSpec(framework="torch", dataset="digits", batch_size=80, val_fraction=0.3)
    with pytest.raises(FitError) as info:
        check_fit(spec, (1, 8, 8), 10, LABELS)
    assert info.value.option == "--batch-size" and "1 to 70" in str(info.value)
    check_fit(spec.model_copy(update={"batch_size": 70}), (1, 8, 8), 10, LABELS)
