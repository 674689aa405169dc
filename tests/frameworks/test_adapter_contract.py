"""One contract, run against every adapter importable here: same model, same numbers, same semantics."""
import numpy as np
import pytest

from sensitivity import frameworks, reference
from sensitivity.models import MODELS, get_model, init_weights
from sensitivity.optim import init_state, lr_schedule, reference_step
from sensitivity.spec import TrialSpec

INPUTS = {"lenet5": (1, 28, 28), "tf_mnist_deep": (1, 28, 28), "cifar10_quick": (3, 32, 32), "mlp": (1, 4, 4)}
AVAILABLE = [name for name in frameworks.FRAMEWORKS if frameworks.importable(name)]


def _spec(framework, **overrides):
    values = dict(framework=framework, dataset="digits", optimizer="momentum", lr=0.1, momentum=0.9)
    values.update(overrides)
    return TrialSpec(**values)


def _build(framework, model_name, seed=0, **spec_overrides):
    adapter = frameworks.load_adapter(framework)
    adapter.setup(threads=2, device="cpu", seed=seed)
    model = get_model(model_name).resolve(10)
    weights = init_weights(model, INPUTS[model_name], 10, seed)
    adapter.build(model, INPUTS[model_name], 10, weights, _spec(framework, **spec_overrides))
    return adapter, model, weights


def _close(actual, expected, rtol=1e-4):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-5 * scale)


def _close_adaptive(actual, expected, max_step):
    """Adam and RMSprop divide by the gradient's own size, so a gradient that is float32 noise around
    zero can take a full step either way: all but 0.1% of the weights agree to the usual tolerance,
    and none differs by more than the largest possible update."""
    scale = np.max(np.abs(expected))
    off = ~np.isclose(actual, expected, rtol=1e-4, atol=1e-5 * scale)
    assert off.mean() < 1e-3, f"{off.sum()} of {off.size} weights differ"
    assert np.max(np.abs(actual - expected)) <= max_step


@pytest.fixture(params=AVAILABLE)
def framework(request):
    return request.param


@pytest.mark.contract
class TestAdapterContract:
    @pytest.mark.parametrize("model_name", sorted(MODELS))
    def test_parameter_count_matches_spec(self, framework, model_name):
        adapter, model, _ = _build(framework, model_name)
        count = sum(k.size + b.size for k, b in adapter.get_weights())
        assert count == model.param_count(INPUTS[model_name], 10)

    @pytest.mark.parametrize("model_name", sorted(MODELS))
    def test_logits_equal_numpy_reference(self, framework, model_name):
        adapter, model, weights = _build(framework, model_name)
        x = np.random.default_rng(1).random((5,) + INPUTS[model_name], dtype=np.float32)
        _close(adapter.predict(x), reference.forward(model, weights, x))

    def test_weights_round_trip_in_neutral_layout(self, framework):
        adapter, _, weights = _build(framework, "lenet5")
        for (k, b), (k0, b0) in zip(adapter.get_weights(), weights):
            np.testing.assert_array_equal(k, k0)
            np.testing.assert_array_equal(b, b0)

    @pytest.mark.parametrize("optimizer", ["sgd", "momentum", "nesterov", "adam", "rmsprop"])
    @pytest.mark.parametrize("policy", ["fixed", "step", "inv", "cosine"])
    def test_steps_follow_canonical_optimizer(self, framework, optimizer, policy):
        lr = 0.001 if optimizer in ("adam", "rmsprop") else 0.05
        overrides = dict(optimizer=optimizer, lr=lr, momentum=0.9, weight_decay=0.01, lr_policy=policy,
                         gamma=0.5, stepsize=2, power=0.75)
        adapter, model, weights = _build(framework, "mlp", **overrides)
        rng = np.random.default_rng(2)
        x = rng.random((48, 1, 4, 4), dtype=np.float32)
        y = rng.integers(0, 10, 48).astype(np.int64)
        adapter.set_data(x, y)
        adapter.compile(8)
        order = rng.permutation(48).reshape(6, 8)
        rates = lr_schedule(TrialSpec(framework=framework, dataset="digits", **overrides), 6)
        stats = adapter.train_epoch(order, rates)
        assert stats.steps == 6 and not stats.diverged

        expected = [np.asarray(a, np.float64) for pair in weights for a in pair]
        state = init_state(optimizer, expected)
        for step, idx in enumerate(order):
            pairs = [tuple(expected[i:i + 2]) for i in range(0, len(expected), 2)]
            _, grads, _ = reference.loss_and_grads(model, pairs, x[idx], y[idx])
            flat = [g for pair in grads for g in pair]
            expected = reference_step(optimizer, expected, flat, state, rates[step], 0.9, 0.01)
        actual = [a for pair in adapter.get_weights() for a in pair]
        for a, e in zip(actual, expected):
            if optimizer in ("adam", "rmsprop"):
                _close_adaptive(a, e, max_step=lr * 10 * len(order))
            else:
                _close(a, e)

    def test_input_gradient_equals_reference(self, framework):
        adapter, model, weights = _build(framework, "mlp")
        rng = np.random.default_rng(3)
        x = rng.random((6, 1, 4, 4), dtype=np.float32)
        y = rng.integers(0, 10, 6).astype(np.int64)
        _, _, grad_of_mean = reference.loss_and_grads(model, weights, x, y)
        _close(adapter.input_gradient(x, y), grad_of_mean * len(y))  # the adapter's is of the sum

    def test_non_finite_loss_stops_the_epoch(self, framework):
        adapter, _, _ = _build(framework, "mlp")
        x = np.random.default_rng(4).random((32, 1, 4, 4), dtype=np.float32)
        adapter.set_data(x, np.arange(32, dtype=np.int64) % 10)
        adapter.compile(8)
        rates = np.array([0.01, np.inf, 0.01, 0.01])  # step 2 sends the weights to infinity
        stats = adapter.train_epoch(np.arange(32).reshape(4, 8), rates)
        assert stats.diverged and stats.steps == 3

    def test_training_learns_a_separable_problem(self, framework):
        adapter, _, _ = _build(framework, "mlp", lr=0.05)
        rng = np.random.default_rng(5)
        x = rng.random((640, 1, 4, 4), dtype=np.float32)
        y = np.argmax(x.reshape(640, 16)[:, :10], axis=1).astype(np.int64)
        adapter.set_data(x, y)
        adapter.compile(32)
        losses = [adapter.train_epoch(rng.permutation(640).reshape(20, 32), np.full(20, 0.05)).mean_loss
                  for _ in range(8)]
        assert losses[-1] < 0.5 * losses[0]
        assert np.mean(np.argmax(adapter.predict(x), axis=1) == y) > 0.6


@pytest.mark.contract
@pytest.mark.skipif(len(AVAILABLE) < 2, reason="needs two frameworks")
def test_lenet_input_gradients_agree_across_frameworks():
    x = np.random.default_rng(6).random((4, 1, 28, 28), dtype=np.float32)
    y = np.arange(4, dtype=np.int64)
    grads = [_build(name, "lenet5")[0].input_gradient(x, y) for name in AVAILABLE]
    for other in grads[1:]:
        _close(other, grads[0])
