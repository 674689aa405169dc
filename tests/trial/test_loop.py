"""The trial loop reads each epoch's weights once: the last epoch's reading is the trial's accuracy, not read again."""
import numpy as np
import pytest

from sensitivity import datasets, frameworks
from sensitivity.core.spec import TrialSpec
from sensitivity.datasets.base import Dataset
from sensitivity.trial import loop

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def readings(monkeypatch, **overrides):
    """(the result of a torch trial on digits, how often it predicted the test set, how often the validation set)."""
    data = Dataset.load_npz(datasets.prepare("digits"))
    adapter = type(frameworks.load_adapter("torch"))
    counts = {"test": 0, "val": 0}
    predict = adapter.predict

    def counted(self, x):
        counts["test" if np.shares_memory(x, data.x_test) else "val"] += 1  # a slice of EVAL_BATCH samples
        return predict(self, x)

    monkeypatch.setattr(adapter, "predict", counted)
    spec = TrialSpec(**{**dict(framework="torch", dataset="digits", model="mlp", batch_size=64, lr=0.05, epochs=3,
                               threads=1, val_fraction=0.2, record_correct=True), **overrides})
    return loop.run(spec, data, "mlp", lambda event: None, 1), counts


def test_the_trials_accuracy_is_its_last_epochs_reading(monkeypatch):
    result, counts = readings(monkeypatch)
    assert counts == {"test": 3, "val": 3}  # once an epoch: the third reading is the trial's
    last = result.curve[-1]
    assert result.accuracy == last["test_accuracy"] and result.val_accuracy == last["val_accuracy"]
    assert result.test_time_s > 0 and result.test_correct


def test_a_diverged_trial_reads_the_weights_it_ends_with(monkeypatch):
    result, counts = readings(monkeypatch, lr=50.0, optimizer="sgd")
    assert result.status == "diverged" and result.curve[-1]["test_accuracy"] is None
    epochs_read = sum(1 for point in result.curve if point["test_accuracy"] is not None)
    assert counts == {"test": epochs_read + 1, "val": epochs_read + 1}
    assert result.accuracy is not None and result.val_accuracy is not None and result.test_time_s > 0
