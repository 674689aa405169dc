"""JAX-specific checks beyond the shared contract: the scanned epoch (accelerators) equals the per-step one
(CPU), the epoch compiled ahead of time is the one that runs, Flax's initialiser, and a trial end to end."""
import numpy as np
import pytest

from sensitivity import frameworks
from sensitivity.core.models import Dense, Dropout, Flatten, ModelSpec, ReLU, get_model, init_weights
from sensitivity.core.spec import TrialSpec

FRAMEWORK = "jax"
pytestmark = pytest.mark.skipif(not frameworks.importable(FRAMEWORK), reason=f"no {FRAMEWORK} here")

SHAPE = (1, 4, 4)
DROPOUT_MLP = ModelSpec("dropout_mlp", (Flatten(), Dense(32), ReLU(), Dropout(0.5), Dense(10)))


def _adapter(model, shape, seed=0, weights="neutral", total_steps=8, **spec):
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, 0) if weights == "neutral" else None  # seed: the framework's
    spec = dict(dict(semantics="canonical"), **spec)
    adapter.build(model, shape, 10, initial, TrialSpec(framework=FRAMEWORK, dataset="digits", **spec), total_steps)
    return adapter, initial


def _data(n=32):
    rng = np.random.default_rng(0)
    return rng.random((n,) + SHAPE, dtype=np.float32), rng.integers(0, 10, n)


@pytest.mark.parametrize("regime", ["canonical", "native"])
@pytest.mark.parametrize("optimizer", ["nesterov", "adam"])
def test_scanned_epoch_equals_per_step_dispatch(optimizer, regime):
    """Also for optax's own optimizer and schedule (native), whose step count lives in the carry."""
    x, y = _data()
    order, rates = np.random.default_rng(1).permutation(32).reshape(4, 8), np.array([0.01, 0.02, 0.01, 0.005])
    weights = []
    for scan in (False, True):
        adapter, _ = _adapter(DROPOUT_MLP, SHAPE, optimizer=optimizer, weight_decay=0.01, semantics=regime,
                              lr=0.01, lr_policy="step", stepsize=3, gamma=0.5)
        adapter.use_scan(scan)
        adapter.set_data(x, y)
        adapter.compile(8)
        stats = [adapter.train_epoch(order, rates) for _ in range(2)]
        weights.append((stats, adapter.get_weights()))
    (stats_step, w_step), (stats_scan, w_scan) = weights
    assert [s.steps for s in stats_scan] == [4, 4]
    np.testing.assert_allclose([s.mean_loss for s in stats_scan], [s.mean_loss for s in stats_step], rtol=1e-5)
    for (k, b), (k2, b2) in zip(w_step, w_scan):
        np.testing.assert_allclose(k, k2, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(b, b2, rtol=1e-5, atol=1e-7)


def test_scanned_epoch_stops_at_the_first_non_finite_loss():
    adapter, _ = _adapter(get_model("mlp").resolve(10), SHAPE)
    adapter.use_scan(True)
    adapter.set_data(*_data())
    adapter.compile(8)
    stats = adapter.train_epoch(np.arange(32).reshape(4, 8), np.array([0.01, np.inf, 0.01, 0.01]))
    assert stats.diverged and stats.steps == 3


def test_the_epoch_compiled_ahead_of_time_is_the_one_that_runs():
    adapter, weights = _adapter(get_model("mlp").resolve(10), SHAPE)
    adapter.set_data(*_data())
    adapter.compile(8)
    for (k, b), (k0, b0) in zip(adapter.get_weights(), weights):  # compiling took no step
        np.testing.assert_array_equal(k, k0)
        np.testing.assert_array_equal(b, b0)
    adapter.train_epoch(np.arange(32).reshape(4, 8), np.full(4, 0.01))
    assert adapter._run._cache_size() == 0  # the jitted function itself never compiled


def test_framework_initialiser_is_seeded_with_zero_biases():
    model, shape = get_model("lenet5").resolve(10), (1, 28, 28)
    first = _adapter(model, shape, seed=3, weights="framework")[0].get_weights()
    again = _adapter(model, shape, seed=3, weights="framework")[0].get_weights()
    other = _adapter(model, shape, seed=4, weights="framework")[0].get_weights()
    for (k, b), (k2, _), (k3, _), (ks, _) in zip(first, again, other, model.param_shapes(shape, 10)):
        assert k.shape == ks
        np.testing.assert_array_equal(k, k2)
        assert not np.array_equal(k, k3) and not b.any()
        fan_in = k[0].size if k.ndim == 4 else k.shape[0]  # lecun_normal: std 1/sqrt(fan_in)
        assert 0.7 < k.std() * np.sqrt(fan_in) < 1.3


def test_end_to_end_trial():
    from sensitivity.trial.runner import run_trial

    result = run_trial(TrialSpec(framework=FRAMEWORK, dataset="digits", batch_size=32, lr=0.05,
                                 optimizer="momentum", momentum=0.9, epochs=3, threads=1))
    assert result.status == "ok", result.reason + result.stderr_tail
    assert result.accuracy > 0.85
    assert result.env["framework_version"].startswith("0.") and "flax" in result.env["framework_version"]
    assert result.env["threads"] is None  # jax cannot be given a thread count: none is claimed


def test_native_runs_optax_and_its_schedule_in_the_carry():
    """The stock path is optax's own state (its count included), carried across epochs; the rates given to
    train_epoch are not read."""
    import optax

    adapter, _ = _adapter(get_model("mlp").resolve(10), SHAPE, semantics="native", init="neutral",
                          optimizer="momentum", momentum=0.9, lr=0.1, lr_policy="step", stepsize=2, gamma=0.5)
    assert int(optax.tree_utils.tree_get(adapter.opt, "count")) == 0  # optax's scale_by_schedule count
    adapter.set_data(*_data())
    adapter.compile(8)
    adapter.train_epoch(np.arange(32).reshape(4, 8), np.full(4, np.nan))  # nan: would poison a hand-written step
    assert all(np.isfinite(k).all() for k, _ in adapter.get_weights())
    assert int(optax.tree_utils.tree_get(adapter.opt, "count")) == 4


def test_numerics_reports_jax_settings():
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=0)
    numerics = adapter.numerics()
    assert numerics["dtype"] == "float32" and numerics["loss_reduction"] == "mean"
    assert numerics["jax_enable_x64"] is False and numerics["platform"] == "cpu"
    assert "jax_default_matmul_precision" in numerics
