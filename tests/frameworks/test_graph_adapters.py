"""Theano and PyTensor compile a graph per shape and constant: the learning rate and weight decay are runtime
inputs, so one compiled step serves every configuration of a model, each with its own hyper-parameters."""
import numpy as np
import pytest

from sensitivity import frameworks, reference
from sensitivity.models import get_model, init_weights
from sensitivity.optim import init_state, reference_step
from sensitivity.spec import TrialSpec

# how each names its compiled step: PyTensor compiles one per batch size
STEP = {"theano": ("step",), "pytensor": ("step", 8)}
pytestmark = pytest.mark.contract


def _adapter(framework, model, shape, seed=0, **spec):
    adapter = frameworks.load_adapter(framework)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, seed)
    adapter.build(model, shape, 10, initial, TrialSpec(framework=framework, dataset="digits", **spec))
    return adapter, initial


@pytest.mark.parametrize("framework", [pytest.param(name, marks=pytest.mark.skipif(
    not frameworks.importable(name), reason=f"no {name} here")) for name in STEP])
def test_configurations_reuse_the_compiled_step_with_their_own_hyperparameters(framework):
    model, shape = get_model("mlp").resolve(10), (1, 4, 4)
    rng = np.random.default_rng(0)
    x, y = rng.random((16,) + shape, dtype=np.float32), rng.integers(0, 10, 16)
    first, _ = _adapter(framework, model, shape, lr=0.1, momentum=0.9)
    first.set_data(x, y)
    first.train_epoch(np.arange(16).reshape(2, 8), np.full(2, 0.1))  # leaves non-zero velocities behind
    step = first.graph.function(*STEP[framework])
    del first
    second, weights = _adapter(framework, model, shape, seed=1, lr=0.02, momentum=0.5, weight_decay=0.03)
    assert second.graph.function(*STEP[framework]) is step  # nothing recompiled
    other, _ = _adapter(framework, model, shape)
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
