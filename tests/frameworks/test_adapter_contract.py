"""One contract, run against every adapter importable here: same model, same numbers, same semantics."""
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from sensitivity import frameworks
from sensitivity.core import envs, reference, semantics
from sensitivity.core.models import MODELS, Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, get_model, init_weights
from sensitivity.core.optim import init_state, lr_schedule, reference_step, rule_update, slot_names
from sensitivity.core.spec import TrialSpec

INPUTS = {"lenet5": (1, 28, 28), "tf_mnist_deep": (1, 28, 28), "cifar10_quick": (3, 32, 32), "mlp": (1, 4, 4)}
AVAILABLE = [name for name in frameworks.FRAMEWORKS if frameworks.importable(name)]
DROPOUT_MLP = ModelSpec("dropout_mlp", (Flatten(), Dense(32), ReLU(), Dropout(0.5), Dense(10)))
CONV_NET = ModelSpec("conv_net", (Conv(3, 3, stride=2, pad=1), Pool("avg", 3, 2), ReLU(), Conv(4, 2),
                                  Pool("max", 2, 2), Flatten(), Dense(10)))
# Caffe's ceil-mode pooling where a framework's own 'valid' or 'same' differs, padded or not
ODD_POOLS = [Pool("avg", 3, 2), Pool("max", 3, 2), Pool("avg", 2, 3), Pool("max", 1, 3), Pool("avg", 5, 3),
             Pool("max", 5, 3)]


OPTIMIZERS = ["sgd", "momentum", "nesterov", "adam", "rmsprop"]
POLICIES = ["fixed", "step", "multistep", "inv", "exp", "cosine"]
# Two settings of the knobs that no framework has natively: between them every value of every Rule field
# that the canonical rule lacks (rate outside the velocity, Chainer's Nesterov, epsilon uncorrected or inside
# the root, epsilon 1e-7, rho 0.99, decoupled weight decay) runs through each adapter's hand-written update.
MIXES = {"chainer-torch-keras": {"update": "chainer", "eps_rho": "torch", "weight_decay": "keras"},
         "jax-keras-canonical": {"update": "jax", "eps_rho": "keras", "weight_decay": "canonical"}}


def _spec(framework, **overrides):
    """The contract's trial spec: canonical unless asked otherwise."""
    values = dict(framework=framework, dataset="digits", optimizer="momentum", lr=0.1, momentum=0.9,
                  semantics="canonical")
    values.update(overrides)
    return TrialSpec(**values)


def _build(framework, model_name, seed=0, weights="neutral", **spec_overrides):
    model = get_model(model_name).resolve(10)
    adapter, initial = _build_spec(framework, model, INPUTS[model_name], seed, weights=weights, **spec_overrides)
    return adapter, model, initial


def _check_steps(framework, optimizer, policy, regime: dict, rule, reference_update, make_state, stock=False):
    """Train the mlp six steps, one `train_epoch` each (state carried between calls), with weight decay and
    `policy`'s rates, and hold every step to `reference_update(weights, grads, state, lr)` in float64
    (state from `make_state(weights)`), taken from the weights the adapter reached the step before.

    Each step starts from the adapter's own weights: float32's rounding then never compounds. From a float64
    trajectory of its own, the reference drifted a full Adam step from the adapter wherever a gradient was
    within rounding of zero, and the next forward pass could flip a ReLU near its kink: on AVX2 CPUs (oneDNN
    picks its kernels by instruction set; DNNL_MAX_CPU_ISA=AVX2 reproduces it here) that moved 15% of MXNet's
    weights after six Adam steps (test_contract_does_not_depend_on_the_cpus_kernels)."""
    lr = 0.001 if optimizer in ("adam", "rmsprop") else 0.05
    overrides = dict(optimizer=optimizer, lr=lr, momentum=0.9, weight_decay=0.01, lr_policy=policy,
                     gamma=0.5, stepsize=2, power=0.75, stepvalues=(2, 4), **regime)
    adapter, model, weights = _build(framework, "mlp", **overrides)
    spec = TrialSpec(framework=framework, dataset="digits", **overrides)
    assert semantics.resolve(spec).stock == stock
    rng = np.random.default_rng(2)
    x = rng.random((48, 1, 4, 4), dtype=np.float32)
    y = rng.integers(0, 10, 48).astype(np.int64)
    adapter.set_data(x, y)
    adapter.compile(8)
    order = rng.permutation(48).reshape(6, 8)
    rates = lr_schedule(spec, 6)
    state = make_state([np.asarray(a, np.float64) for pair in weights for a in pair])
    flat = lambda pairs: [np.asarray(a, np.float64) for pair in pairs for a in pair]  # noqa: E731
    noisy = None
    l2 = 0.01 if rule.weight_decay == "l2" else 0.0  # what joins the gradient an adaptive method divides
    for step, idx in enumerate(order):
        before = flat(adapter.get_weights())
        pairs = [tuple(before[i:i + 2]) for i in range(0, len(before), 2)]
        _, grads, _, sizes = reference.loss_and_grads(model, pairs, x[idx], y[idx], magnitudes=True)
        grads, sizes = flat(grads), flat(sizes)
        # float32 rounds a gradient to about 1e-6 of its terms' sum: one within 1e-3 of that (L2 term
        # included) is rounding-sensitive, and stays so in an adaptive method's moments
        near = [np.abs(g + l2 * w) < 1e-3 * terms for g, w, terms in zip(grads, before, sizes)]
        noisy = near if noisy is None else [a | b for a, b in zip(noisy, near)]
        if optimizer in ("adam", "rmsprop"):  # over all weights: one of a 10-value bias is not 10% of the data
            share = sum(n.sum() for n in noisy) / sum(n.size for n in noisy)
            assert share < 0.02, f"{share:.1%} of gradients near zero: choose other data"
        expected = reference_update(before, grads, state, rates[step])
        stats = adapter.train_epoch(idx[None], rates[step:step + 1])
        assert stats.steps == 1 and not stats.diverged
        for a, e, near_zero in zip(flat(adapter.get_weights()), expected, noisy):
            if optimizer in ("adam", "rmsprop"):
                _close_adaptive(a, e, near_zero, max_step=lr * 10)
            else:
                _close(a, e)


def _check_distribution(what: str, values: np.ndarray, expected: dict, uniform: bool) -> None:
    n = values.size
    if expected["var"] == 0:
        assert np.all(values == 0), f"{what}: expected zeros"
        return
    bound, sd = expected["bound"], np.sqrt(expected["var"])
    assert np.abs(values).max() <= bound * (1 + 1e-6), f"{what}: {np.abs(values).max()} beyond {bound}"
    if uniform and n >= 100:
        assert np.abs(values).max() >= bound * (1 - 20 / n), f"{what}: never near the bound {bound}"
    assert abs(values.mean()) <= 5 * sd / np.sqrt(n), f"{what}: mean {values.mean()} (sd {sd}, n {n})"
    assert abs(values.var() / expected["var"] - 1) <= 5 * np.sqrt(2 / n), \
        f"{what}: variance {values.var()} against {expected['var']} (n {n})"


def _build_spec(framework, model, shape, seed=0, weights="neutral", init_seed=None, total_steps=6,
                **spec_overrides):
    """An adapter built on `model` with the framework's seed `seed`: neutral weights drawn from `init_seed`
    (default: `seed`), or with weights=None the framework's own initialiser."""
    adapter = frameworks.load_adapter(framework)
    adapter.setup(threads=2, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, seed if init_seed is None else init_seed) if weights == "neutral" \
        else None
    adapter.build(model, shape, 10, initial, _spec(framework, **spec_overrides), total_steps)
    return adapter, initial


def _close(actual, expected, rtol=1e-4):
    scale = np.max(np.abs(expected))
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-5 * scale)


def _close_adaptive(actual, expected, noisy, max_step):
    """Adam and RMSprop divide a gradient by its own size, so where a gradient is within float32 rounding
    of zero (`noisy`), float32 arithmetic may step either way: those weights may differ by at most the
    largest possible update; every other weight agrees to the usual tolerance."""
    _close(actual[~noisy], expected[~noisy])
    assert np.max(np.abs(actual - expected), initial=0) <= max_step


@pytest.mark.contract
@pytest.mark.skipif(os.environ.get("SENSITIVITY_REQUIRE_ALL_FRAMEWORKS") != "1",
                    reason="CI sets SENSITIVITY_REQUIRE_ALL_FRAMEWORKS=1: no adapter may drop out of the contract")
def test_every_framework_of_this_environment_is_under_contract():
    here = Path(sys.prefix).name  # .venv or .venv-legacy
    expected = [name for name, info in frameworks.FRAMEWORKS.items() if envs.VENV_DIRS[info.env] == here]
    assert expected and AVAILABLE == expected, f"{here}: {sorted(set(expected) - set(AVAILABLE))} not importable"


@pytest.fixture(params=AVAILABLE)
def framework(request):
    return request.param


@pytest.mark.contract
class TestAdapterContract:
    @pytest.mark.parametrize("model_name", sorted(MODELS))
    def test_parameter_count_matches_spec(self, framework, model_name):
        adapter, model, _ = _build(framework, model_name)
        assert adapter.parameter_count() == model.param_count(INPUTS[model_name], 10)

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

    @pytest.mark.parametrize("optimizer", OPTIMIZERS)
    @pytest.mark.parametrize("policy", POLICIES)
    def test_steps_follow_canonical_optimizer(self, framework, optimizer, policy):
        """Two epochs of three steps (state carried between epochs), weight decay, a rate that changes."""
        _check_steps(framework, optimizer, policy, dict(semantics="canonical"), semantics.CANONICAL_RULE,
                     lambda w, g, state, lr: reference_step(optimizer, w, g, state, lr, 0.9, 0.01),
                     lambda weights: init_state(optimizer, weights))

    @pytest.mark.parametrize("optimizer", OPTIMIZERS)
    @pytest.mark.parametrize("policy", POLICIES)
    def test_native_steps_follow_the_frameworks_documented_formulas(self, framework, optimizer, policy):
        """The framework's own optimizer class and scheduler (stock) against its documented formulas in
        float64 (reference.native_step), from the same neutral weights: the rates its scheduler steps to
        must be Caffe's, and its formulas those docs/semantics.md gives."""
        _check_steps(framework, optimizer, policy, dict(semantics="native", init="neutral"),
                     semantics.NATIVE[framework].rule,
                     lambda w, g, state, lr: reference.native_step(framework, optimizer, w, g, state, lr, 0.9, 0.01),
                     lambda weights: reference.native_state(optimizer, weights),
                     stock=bool(semantics.NATIVE[framework].classes))

    @pytest.mark.parametrize("optimizer", OPTIMIZERS)
    @pytest.mark.parametrize("mix", sorted(MIXES))
    def test_hand_written_update_follows_any_rule(self, framework, optimizer, mix):
        """Knobs from other frameworks (an ablation's points) run optim.rule_update on the framework's tensors;
        float64 rule_update, itself held to every framework's documented formulas (test_optim), is the yardstick."""
        spec = _spec(framework, optimizer=optimizer, knobs=MIXES[mix], weight_decay=0.01)
        rule = semantics.resolve(spec).rule
        assert not semantics.resolve(spec).stock

        def step(weights, grads, state, lr):
            state["t"] += 1
            new = []
            for i, (w, g) in enumerate(zip(weights, grads)):
                slots = state["slots"].setdefault(i, {name: np.zeros_like(w) for name in slot_names(optimizer)})
                w, updated = rule_update(rule, optimizer, w, g, slots, lr, 0.9, 0.01, state["t"])
                slots.update(updated)
                new.append(w)
            return new

        _check_steps(framework, optimizer, "step", dict(semantics="canonical", knobs=MIXES[mix]), rule, step,
                     lambda weights: {"t": 0, "slots": {}})

    @pytest.mark.parametrize("policy", POLICIES)
    def test_framework_scheduler_gives_caffe_rates(self, framework, policy):
        """The rates of the framework's own scheduler, stepped once per iteration, are Caffe's (float32
        schedules round them); the schedule knob's two values differ by that rounding alone."""
        if not semantics.NATIVE[framework].scheduler:
            pytest.skip(f"{framework} has no scheduler: its native rates are the loop's")
        spec = _spec(framework, lr=0.1, lr_policy=policy, gamma=0.5, power=0.75, stepsize=3, stepvalues=(2, 5),
                     semantics="native")
        adapter = frameworks.load_adapter(framework)
        adapter.setup(threads=2, device="cpu", seed=0)
        np.testing.assert_allclose(adapter.framework_rates(spec, 12), lr_schedule(spec, 12), rtol=2e-6)

    @pytest.mark.parametrize("model_name", ["lenet5", "mlp"])
    def test_native_initialiser_follows_its_documented_distribution(self, framework, model_name):
        """Bounds, mean and variance of every kernel and bias against docs/semantics.md's distribution,
        within 5 standard errors (and a uniform's extreme within 20/n of its bound)."""
        adapter, model, _ = _build(framework, model_name, seed=3, weights=None, semantics="native")
        init = semantics.NATIVE[framework].init
        for (kernel, bias), (kernel_shape, _) in zip(adapter.get_weights(),
                                                     model.param_shapes(INPUTS[model_name], 10)):
            expected = semantics.expected_moments(init, kernel_shape)
            for name, values in (("kernel", kernel), ("bias", bias)):
                _check_distribution(f"{name} {kernel_shape}", np.asarray(values, np.float64).ravel(),
                                    expected[name], uniform=(init.kernel if name == "kernel" else init.bias) == "uniform")

    def test_input_gradient_equals_reference(self, framework):
        adapter, model, weights = _build(framework, "mlp")
        rng = np.random.default_rng(3)
        x = rng.random((6, 1, 4, 4), dtype=np.float32)
        y = rng.integers(0, 10, 6).astype(np.int64)
        _, _, grad_of_mean = reference.loss_and_grads(model, weights, x, y)
        _close(adapter.input_gradient(x, y), grad_of_mean * len(y))  # the adapter's is of the sum

    def test_lenet_input_gradient_equals_finite_differences(self, framework):
        """Through convolutions and Caffe's max pooling: the adapter's input gradient at 40 pixels against
        central differences of the float64 reference's summed loss, the same yardstick for every framework."""
        adapter, model, weights = _build(framework, "lenet5")
        rng = np.random.default_rng(6)
        x, y = rng.random((2, 1, 28, 28), dtype=np.float32), np.array([3, 7])
        grad = adapter.input_gradient(x, y)
        pixels = [(n, 0, *rng.integers(4, 24, 2)) for n in (0, 1) for _ in range(20)]
        numeric = []
        for pixel in pixels:
            plus, minus = x.astype(np.float64), x.astype(np.float64)
            plus[pixel] += 1e-5
            minus[pixel] -= 1e-5
            numeric.append(len(y) * (reference.cross_entropy(reference.forward(model, weights, plus), y)
                                     - reference.cross_entropy(reference.forward(model, weights, minus), y)) / 2e-5)
        assert np.abs(numeric).max() > 0
        np.testing.assert_allclose([grad[p] for p in pixels], numeric, rtol=1e-3, atol=1e-3 * np.abs(numeric).max())

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


    @pytest.mark.parametrize("pool", ODD_POOLS, ids=str)
    def test_caffe_pooling_at_odd_sizes_equals_reference(self, framework, pool):
        model, shape = ModelSpec("pool", (Conv(2, 1), pool, Flatten(), Dense(10))), (2, 9, 10)
        adapter, weights = _build_spec(framework, model, shape)
        x = np.random.default_rng(0).standard_normal((3,) + shape).astype(np.float32)  # negatives: -inf padding
        _close(adapter.predict(x), reference.forward(model, weights, x))

    def test_convolution_and_pooling_gradients_match_finite_differences(self, framework):
        """One SGD step at lr 1 moves each weight by its gradient; central differences of the float64
        reference loss give the same gradient (strided, padded convolution, ceil average and max pooling)."""
        shape = (2, 11, 12)
        adapter, weights = _build_spec(framework, CONV_NET, shape, optimizer="sgd", lr=1.0)
        rng = np.random.default_rng(1)
        x, y = rng.random((4,) + shape, dtype=np.float32), rng.integers(0, 10, 4)
        adapter.set_data(x, y)
        adapter.compile(4)
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

    def test_reported_loss_is_the_data_loss_without_the_l2_term(self, framework):
        adapter, model, weights = _build(framework, "mlp", optimizer="sgd", lr=0.01, weight_decay=0.5)
        rng = np.random.default_rng(0)
        x, y = rng.random((16, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 16)
        adapter.set_data(x, y)
        adapter.compile(16)
        stats = adapter.train_epoch(np.arange(16)[None], np.array([0.01]))
        assert stats.mean_loss == pytest.approx(reference.loss_and_grads(model, weights, x, y)[0], rel=1e-5)

    @pytest.mark.parametrize("initial", ["neutral", "framework"])
    def test_seed_fixes_dropout_and_the_framework_initialiser(self, framework, initial):
        """Neutral weights are the same for every seed, so there the seed drives dropout alone."""
        rng = np.random.default_rng(7)
        x, y = rng.random((64, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 64)
        trained = []
        for seed in (1, 1, 2):
            adapter, _ = _build_spec(framework, DROPOUT_MLP, (1, 4, 4), seed=seed, init_seed=0,
                                     weights="neutral" if initial == "neutral" else None, lr=0.05)
            adapter.set_data(x, y)
            adapter.compile(16)
            adapter.train_epoch(np.arange(64).reshape(4, 16), np.full(4, 0.05))
            trained.append(adapter.get_weights()[0][0])
            ones = np.ones((2, 1, 4, 4), np.float32)
            np.testing.assert_array_equal(adapter.predict(ones), adapter.predict(ones))  # no dropout predicting
            del adapter  # a graph framework reuses the compiled graph, which must start from scratch
        np.testing.assert_array_equal(trained[0], trained[1])
        assert not np.allclose(trained[0], trained[2])

    def test_deferred_loss_check_reports_the_first_non_finite_step(self, framework):
        """As on a GPU, where the adapters that can read the losses in groups (check_every) do."""
        adapter, _, _ = _build(framework, "mlp")
        if not hasattr(adapter, "check_every"):
            pytest.skip(f"{framework} checks every loss as it comes")
        adapter.check_every = 25
        adapter.set_data(np.random.default_rng(4).random((32, 1, 4, 4), dtype=np.float32), np.arange(32) % 10)
        adapter.compile(8)
        stats = adapter.train_epoch(np.arange(32).reshape(4, 8), np.array([0.01, np.inf, 0.01, 0.01]))
        assert stats.diverged and stats.steps == 3


@pytest.mark.contract
@pytest.mark.skipif(len(AVAILABLE) < 2, reason="needs two frameworks")
def test_lenet_training_steps_agree_across_frameworks():
    """Convolution and Caffe max pooling in the training graph: two momentum steps on LeNet-5 with weight
    decay land at the same weights in every framework."""
    model, shape = get_model("lenet5").resolve(10), (1, 28, 28)
    rng = np.random.default_rng(8)
    x, y = rng.random((32,) + shape, dtype=np.float32), rng.integers(0, 10, 32)
    results = []
    for name in AVAILABLE:
        adapter, _ = _build_spec(name, model, shape, lr=0.05, momentum=0.9, weight_decay=0.01)
        adapter.set_data(x, y)
        adapter.compile(16)
        adapter.train_epoch(np.arange(32).reshape(2, 16), np.array([0.05, 0.02]))
        results.append(adapter.get_weights())
    for other in results[1:]:
        for (k, b), (k0, b0) in zip(other, results[0]):
            _close(k, k0)
            _close(b, b0)


@pytest.mark.contract
@pytest.mark.skipif(len(AVAILABLE) < 2, reason="needs two frameworks")
def test_lenet_input_gradients_agree_across_frameworks():
    x = np.random.default_rng(6).random((4, 1, 28, 28), dtype=np.float32)
    y = np.arange(4, dtype=np.int64)
    grads = [_build(name, "lenet5")[0].input_gradient(x, y) for name in AVAILABLE]
    for other in grads[1:]:
        _close(other, grads[0])
