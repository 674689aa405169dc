"""MXNet-specific checks beyond the shared contract: Caffe pooling at odd sizes, the deferred loss check
a GPU uses, and seeded dropout and initialisers."""
import numpy as np
import pytest

from sensitivity import frameworks, reference
from sensitivity.models import Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, init_weights
from sensitivity.spec import TrialSpec

pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(not frameworks.importable("mxnet"), reason="mxnet is not installed here")]

DROPOUT_MLP = ModelSpec("dropout_mlp", (Flatten(), Dense(32), ReLU(), Dropout(0.5), Dense(10)))


def _adapter(model, shape, seed=0, weights="neutral"):
    adapter = frameworks.load_adapter("mxnet")
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, seed) if weights == "neutral" else None
    adapter.build(model, shape, 10, initial, TrialSpec(framework="mxnet", dataset="digits", lr=0.05))
    return adapter, initial


@pytest.mark.parametrize("pool", [Pool("avg", 3, 2), Pool("max", 3, 2), Pool("avg", 2, 3), Pool("max", 1, 3)])
def test_caffe_pooling_at_odd_sizes_equals_reference(pool):
    model = ModelSpec("pool", (pool, Flatten(), Dense(10)))
    shape = (2, 9, 10)
    adapter, weights = _adapter(model, shape)
    x = np.random.default_rng(0).random((3,) + shape, dtype=np.float32)
    np.testing.assert_allclose(adapter.predict(x), reference.forward(model, weights, x), rtol=1e-4, atol=1e-5)


def test_deferred_loss_check_reports_the_first_non_finite_step():
    adapter, _ = _adapter(DROPOUT_MLP, (1, 4, 4))
    adapter.check_every = 25  # as on a GPU: the losses are read in groups
    adapter.set_data(np.random.default_rng(4).random((32, 1, 4, 4), dtype=np.float32), np.arange(32) % 10)
    stats = adapter.train_epoch(np.arange(32).reshape(4, 8), np.array([0.01, np.inf, 0.01, 0.01]))
    assert stats.diverged and stats.steps == 3


def _trained(seed, weights="neutral"):
    adapter, _ = _adapter(DROPOUT_MLP, (1, 4, 4), seed=seed, weights=weights)
    rng = np.random.default_rng(7)
    adapter.set_data(rng.random((64, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 64))
    adapter.train_epoch(np.arange(64).reshape(4, 16), np.full(4, 0.05))
    return adapter


def test_seed_fixes_dropout_and_the_framework_initialiser():
    for weights in ("neutral", None):
        a, b, c = _trained(1, weights), _trained(1, weights), _trained(2, weights)
        np.testing.assert_array_equal(a.get_weights()[0][0], b.get_weights()[0][0])
        assert not np.array_equal(a.get_weights()[0][0], c.get_weights()[0][0])
    x = np.ones((2, 1, 4, 4), np.float32)
    np.testing.assert_array_equal(a.predict(x), a.predict(x))  # no dropout when predicting


@pytest.mark.skipif(not frameworks.importable("chainer"), reason="compares with chainer")
def test_lenet_training_steps_equal_chainers():
    """Convolution and Caffe max pooling in the training graph (the contract follows optimizer steps on an
    MLP only): two momentum steps on LeNet-5 land where Chainer's do."""
    from sensitivity.models import get_model
    model, shape = get_model("lenet5").resolve(10), (1, 28, 28)
    rng = np.random.default_rng(8)
    x, y = rng.random((32,) + shape, dtype=np.float32), rng.integers(0, 10, 32)
    results = []
    for name in ("mxnet", "chainer"):
        adapter = frameworks.load_adapter(name)
        adapter.setup(threads=1, device="cpu", seed=0)
        adapter.build(model, shape, 10, init_weights(model, shape, 10, 0),
                      TrialSpec(framework=name, dataset="digits", lr=0.05, momentum=0.9, weight_decay=0.01))
        adapter.set_data(x, y)
        adapter.compile(16)
        adapter.train_epoch(np.arange(32).reshape(2, 16), np.array([0.05, 0.02]))
        results.append(adapter.get_weights())
    for (k, b), (k0, b0) in zip(*results):
        np.testing.assert_allclose(k, k0, rtol=1e-4, atol=1e-5 * np.abs(k0).max())
        np.testing.assert_allclose(b, b0, rtol=1e-4, atol=1e-5 * np.abs(b0).max())
