"""TensorFlow-specific checks beyond the shared contract: the native path runs tf.keras's optimizer classes on
the adapter's tf.Variables, compile restores them, numerics, and a trial end to end."""
import numpy as np
import pytest

from sensitivity import frameworks
from sensitivity.core.models import Pool, get_model, init_weights
from sensitivity.core.spec import TrialSpec

FRAMEWORK = "tensorflow"
pytestmark = pytest.mark.skipif(not frameworks.importable(FRAMEWORK), reason=f"no {FRAMEWORK} here")


def _adapter(model, shape, seed=0, weights="neutral", **spec):
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, 0) if weights == "neutral" else None
    adapter.build(model, shape, 10, initial, TrialSpec(framework=FRAMEWORK, dataset="digits", **spec), total_steps=6)
    return adapter, initial


@pytest.mark.parametrize("semantics", ["native", "canonical"])
def test_optimizer_of_each_regime_and_compile_restores_its_state(semantics):
    import keras

    from sensitivity.frameworks.tensorflow_adapter import RuleOptimizer, StockOptimizer

    if semantics == "native" and keras.backend.backend() != "tensorflow":
        pytest.skip("tf.keras's optimizers need Keras on its tensorflow backend")
    adapter, initial = _adapter(get_model("mlp").resolve(10), (1, 4, 4), optimizer="adam", lr=0.01,
                                weight_decay=0.01, lr_policy="cosine", semantics=semantics)
    if semantics == "native":
        assert isinstance(adapter.optimizer, StockOptimizer)
        opt = adapter.optimizer.optimizer
        assert isinstance(opt, keras.optimizers.Adam) and opt.epsilon == 1e-7 and opt.weight_decay == 0.01
        assert isinstance(opt._learning_rate, keras.optimizers.schedules.CosineDecay)
    else:
        assert isinstance(adapter.optimizer, RuleOptimizer)
    rng = np.random.default_rng(0)
    adapter.set_data(rng.random((32, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 32))
    adapter.compile(8)
    assert all(not np.any(v.numpy()) for v in adapter.optimizer.variables())  # slots and step count still 0
    for (k, b), (k0, b0) in zip(adapter.get_weights(), initial):
        np.testing.assert_array_equal(k, k0)
        np.testing.assert_array_equal(b, b0)
    stats = adapter.train_epoch(np.arange(32).reshape(4, 8), np.full(4, 0.01))
    assert stats.steps == 4 and not stats.diverged


@pytest.mark.parametrize("model, shape", [("mlp", (1, 4, 4)), ("lenet5", (1, 28, 28))])
def test_predictions_of_any_batch_size_share_one_graph(model, shape):
    """The test and validation sets differ in size: one traced forward graph serves both (a trace per size cost
    each trial a second trace), and a batch predicts as it does inside a larger one."""
    adapter, _ = _adapter(get_model(model).resolve(10), shape, optimizer="sgd", lr=0.01)
    x = np.random.default_rng(0).random((13, *shape), dtype=np.float32)
    whole = adapter.predict(x)
    parts = [adapter.predict(x[:7]), adapter.predict(x[7:]), adapter.predict(x[:1])]
    assert adapter._forward.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(np.concatenate(parts[:2]), whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(parts[2], whole[:1], rtol=1e-5, atol=1e-6)


def test_native_under_another_keras_backend_is_refused_with_a_clear_error():
    import keras

    if keras.backend.backend() == "tensorflow":
        pytest.skip("keras runs on its tensorflow backend here (test_keras_adapter runs this under the others)")
    with pytest.raises(RuntimeError, match="native optimizers are tf.keras's.*unset KERAS_BACKEND"):
        _adapter(get_model("mlp").resolve(10), (1, 4, 4), semantics="native")


def test_pooling_padding_chooses_valid_same_or_explicit():
    from sensitivity.frameworks.tensorflow_adapter import _pool_padding

    assert _pool_padding(Pool("max", 2, 2), (1, 24, 24)) == "VALID"  # LeNet: no padding needed
    assert _pool_padding(Pool("max", 3, 2), (1, 32, 32)) == "SAME"  # cifar10_quick: one row after
    assert _pool_padding(Pool("avg", 5, 3), (1, 9, 10)) == [[0, 0], [0, 2], [0, 1], [0, 0]]


def test_numerics_reports_tensorflows_settings():
    adapter, _ = _adapter(get_model("mlp").resolve(10), (1, 4, 4), semantics="canonical")
    numerics = adapter.numerics()
    assert numerics["dtype"] == "float32" and numerics["loss_reduction"] == "mean"
    assert isinstance(numerics["tensor_float_32_execution"], bool)
    assert numerics["op_determinism"] is False  # no test here asks for deterministic kernels


def test_op_determinism_reads_true_in_a_worker_started_for_deterministic_kernels():
    """TensorFlow 2.21 has no public getter for op determinism (it read None): a worker started for
    deterministic kernels reports True. A fresh process, as enabling it cannot be undone."""
    import os
    import subprocess
    import sys

    from sensitivity.frameworks.gpu import DETERMINISM_VARIABLE

    code = ("from sensitivity.frameworks.tensorflow_adapter import TensorflowAdapter; a = TensorflowAdapter(); "
            "a.setup(1, 'cpu', 0); print(a.numerics()['op_determinism'])")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, DETERMINISM_VARIABLE: "1"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "True"


@pytest.mark.parametrize("semantics", ["native", "canonical"])
def test_end_to_end_trial(semantics):
    from sensitivity.trial.runner import run_trial

    result = run_trial(TrialSpec(framework=FRAMEWORK, dataset="digits", batch_size=32, lr=0.05, optimizer="momentum",
                                 momentum=0.9, epochs=3, threads=1, semantics=semantics, lr_policy="step",
                                 stepsize=40, gamma=0.5))
    assert result.status == "ok", result.reason + result.stderr_tail
    assert result.accuracy > 0.85
    assert result.env["numerics"]["dtype"] == "float32"


def test_gpu_placement_reports_the_gpu_that_gpu_setup_named(monkeypatch):
    """gpu_setup names GPU N "/GPU:N"; the placement report describes physical GPU N (the GPUs are faked: none
    here)."""
    import tensorflow as tf

    from sensitivity.frameworks.backends import tensorflow as tf_helpers

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind: ["gpu 0", "gpu 1"] if kind == "GPU" else [])
    monkeypatch.setattr(tf.config.experimental, "get_device_details", lambda device: {"device_name": device})
    placed = "/job:localhost/replica:0/task:0/device:GPU:1"
    report = tf_helpers.gpu_placement("tensorflow", "/GPU:1", {"model": placed, "data": placed})
    assert report["device_name"] == "gpu 1" and report["placed"] == {"model": placed, "data": placed}
