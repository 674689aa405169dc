"""Theano and PyTensor compile a graph per shape and constant: the learning rate and weight decay are runtime
inputs, so one compiled step serves every configuration of a model, each with its own hyper-parameters."""
import numpy as np
import pytest

from sensitivity import frameworks
from sensitivity.core import reference, semantics
from sensitivity.core.models import get_model, init_weights
from sensitivity.core.optim import init_state, lr_schedule, reference_step
from sensitivity.core.spec import TrialSpec

# how each names its compiled step: PyTensor compiles one per batch size
STEP = {"theano": ("step",), "pytensor": ("step", 8)}
pytestmark = pytest.mark.contract


def _adapter(framework, model, shape, seed=0, **spec):
    adapter = frameworks.load_adapter(framework)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, seed)
    adapter.build(model, shape, 10, initial, TrialSpec(framework=framework, dataset="digits", **spec), total_steps=2)
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


@pytest.mark.skipif(not frameworks.importable("pytensor"), reason="no pytensor here")
def test_pytensor_reports_its_numerics_and_the_loops_rates():
    adapter = frameworks.load_adapter("pytensor")
    adapter.setup(threads=1, device="cpu", seed=0)
    numerics = adapter.numerics()
    assert numerics["dtype"] == "float32" and numerics["loss_reduction"] == "mean"
    assert numerics["linker"] in ("VMLinker", "NumbaLinker", "JAXLinker", "CLinker")
    spec = TrialSpec(framework="pytensor", dataset="digits", lr=0.1, lr_policy="step", stepsize=2, gamma=0.5,
                     semantics="canonical")
    np.testing.assert_array_equal(adapter.framework_rates(spec, 5), lr_schedule(spec, 5))


@pytest.mark.skipif(not frameworks.importable("theano"), reason="no theano here")
def test_theano_reports_its_numerics_the_loops_rates_and_keeps_a_graph_per_rule():
    adapter = frameworks.load_adapter("theano")
    adapter.setup(threads=1, device="cpu", seed=0)
    numerics = adapter.numerics()
    assert numerics["dtype"] == "float32" and numerics["loss_reduction"] == "mean" and numerics["mode"]
    spec = TrialSpec(framework="theano", dataset="digits", lr=0.1, lr_policy="step", stepsize=2, gamma=0.5)
    np.testing.assert_array_equal(adapter.framework_rates(spec, 5), lr_schedule(spec, 5))
    model, shape = get_model("mlp").resolve(10), (1, 4, 4)
    native, _ = _adapter("theano", model, shape, optimizer="adam")
    graph = native.graph
    assert graph.rule == semantics.CANONICAL_RULE  # the tutorials' update is the canonical one
    del native  # its graph is free now, but not for another Rule: that one is compiled apart
    mixed, _ = _adapter("theano", model, shape, optimizer="adam", knobs={"update": "keras", "eps_rho": "keras"})
    assert mixed.graph is not graph and mixed.graph.rule.adam_eps == "uncorrected"
    assert _adapter("theano", model, shape, optimizer="adam", lr=0.5)[0].graph is graph
