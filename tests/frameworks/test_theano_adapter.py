"""Theano-specific checks beyond the shared contract: one compiled step serves every configuration,
Caffe pooling at odd sizes, convolution and pooling gradients, seeded dropout and initialiser."""
import numpy as np
import pytest

from sensitivity import frameworks, reference
from sensitivity.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, get_model, init_weights
from sensitivity.optim import init_state, reference_step
from sensitivity.spec import TrialSpec

FRAMEWORK = "theano"
pytestmark = [pytest.mark.contract,
              pytest.mark.skipif(not frameworks.importable(FRAMEWORK), reason=f"no {FRAMEWORK} here")]

DROPOUT_MLP = ModelSpec("dropout_mlp", (Flatten(), Dense(32), ReLU(), Dropout(0.5), Dense(10)))
CONV_NET = ModelSpec("conv_net", (Conv(3, 3, stride=2, pad=1), Pool("avg", 3, 2), ReLU(), Conv(4, 2),
                                  Pool("max", 2, 2), Flatten(), Dense(10)))


def _adapter(model, shape, seed=0, weights="neutral", **spec):
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, seed) if weights == "neutral" else None
    adapter.build(model, shape, 10, initial, TrialSpec(framework=FRAMEWORK, dataset="digits", **spec))
    return adapter, initial


def test_configurations_reuse_the_compiled_step_with_their_own_hyperparameters():
    model, shape = get_model("mlp").resolve(10), (1, 4, 4)
    rng = np.random.default_rng(0)
    x, y = rng.random((16,) + shape, dtype=np.float32), rng.integers(0, 10, 16)
    first, _ = _adapter(model, shape, lr=0.1, momentum=0.9)
    first.set_data(x, y)
    first.train_epoch(np.arange(16).reshape(2, 8), np.full(2, 0.1))  # leaves non-zero velocities behind
    step = first.graph.function("step")
    del first
    second, weights = _adapter(model, shape, seed=1, lr=0.02, momentum=0.5, weight_decay=0.03)
    assert second.graph.function("step") is step  # nothing recompiled
    other, _ = _adapter(model, shape)
    assert other.graph is not second.graph  # a live adapter keeps its own variables
    second.set_data(x, y)
    order, rates = np.arange(16).reshape(2, 8), np.array([0.02, 0.01])
    second.train_epoch(order, rates)
    expected = [np.asarray(a, np.float64) for pair in weights for a in pair]
    state = init_state("momentum", expected)
    for idx, lr in zip(order, rates):
        pairs = [tuple(expected[i:i + 2]) for i in range(0, len(expected), 2)]
        grads = [g for pair in reference.loss_and_grads(model, pairs, x[idx], y[idx])[1] for g in pair]
        expected = reference_step("momentum", expected, grads, state, lr, 0.5, 0.03)
    for actual, wanted in zip([a for pair in second.get_weights() for a in pair], expected):
        np.testing.assert_allclose(actual, wanted, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pool", [Pool("avg", 3, 2), Pool("max", 3, 2), Pool("avg", 2, 3), Pool("max", 1, 3)])
def test_caffe_pooling_at_odd_sizes_equals_reference(pool):
    model, shape = ModelSpec("pool", (pool, Flatten(), Dense(10))), (2, 9, 10)
    adapter, weights = _adapter(model, shape)
    x = np.random.default_rng(0).random((3,) + shape, dtype=np.float32)
    np.testing.assert_allclose(adapter.predict(x), reference.forward(model, weights, x), rtol=1e-4, atol=1e-5)


def test_convolution_and_pooling_gradients_match_finite_differences():
    """One SGD step at lr 1 moves each weight by its gradient; central differences of the float64
    reference loss give the same gradient (strided, padded convolution, ceil average and max pooling)."""
    shape = (2, 11, 12)
    adapter, weights = _adapter(CONV_NET, shape, optimizer="sgd", lr=1.0)
    rng = np.random.default_rng(1)
    x, y = rng.random((4,) + shape, dtype=np.float32), rng.integers(0, 10, 4)
    adapter.set_data(x, y)
    adapter.train_epoch(np.arange(4).reshape(1, 4), np.ones(1))
    flat = [np.asarray(a, np.float64) for pair in weights for a in pair]

    def loss(arrays):
        pairs = [tuple(arrays[i:i + 2]) for i in range(0, len(arrays), 2)]
        return reference.cross_entropy(reference.forward(CONV_NET, pairs, x), y)

    for i, (before, after) in enumerate(zip(flat, [a for pair in adapter.get_weights() for a in pair])):
        numeric = np.zeros_like(before)
        for j in np.ndindex(before.shape):
            plus, minus = [a.copy() for a in flat], [a.copy() for a in flat]
            plus[i][j] += 1e-6
            minus[i][j] -= 1e-6
            numeric[j] = (loss(plus) - loss(minus)) / 2e-6
        np.testing.assert_allclose(before - after, numeric, rtol=1e-3, atol=1e-4 * np.abs(numeric).max())


def _trained(seed, weights="neutral"):
    adapter, _ = _adapter(DROPOUT_MLP, (1, 4, 4), seed=seed, weights=weights, lr=0.05)
    rng = np.random.default_rng(7)
    adapter.set_data(rng.random((64, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 64))
    adapter.train_epoch(np.arange(64).reshape(4, 16), np.full(4, 0.05))
    return adapter


def test_seed_fixes_dropout_and_the_framework_initialiser():
    for weights in ("neutral", None):
        a = _trained(1, weights)
        kernel = a.get_weights()[0][0]
        del a  # its compiled graph is reused by the next build, which must start from scratch
        b, c = _trained(1, weights), _trained(2, weights)
        np.testing.assert_array_equal(kernel, b.get_weights()[0][0])
        assert not np.array_equal(kernel, c.get_weights()[0][0])
    x = np.ones((2, 1, 4, 4), np.float32)
    np.testing.assert_array_equal(b.predict(x), b.predict(x))  # no dropout when predicting
