"""Keras-specific checks beyond the shared contract: the contract under every backend (each in its own
process, since KERAS_BACKEND is read at import), a trial end to end per backend, the backend check and
the Keras initialiser."""
import subprocess
import sys

import numpy as np
import pytest

from sensitivity import frameworks
from sensitivity.core import envs
from sensitivity.core.models import get_model, init_weights
from sensitivity.core.spec import TrialSpec

FRAMEWORK = "keras"
pytestmark = pytest.mark.skipif(not frameworks.importable(FRAMEWORK), reason=f"no {FRAMEWORK} here")



def _adapter(model, shape, seed=0, weights="neutral", **spec):
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, 0) if weights == "neutral" else None  # seed: the framework's
    adapter.build(model, shape, 10, initial, TrialSpec(framework=FRAMEWORK, dataset="digits", **spec), total_steps=6)
    return adapter, initial


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_contract_and_these_checks_pass_under_other_backends(backend):
    """The in-process tests here and the contract run on the default backend (tensorflow); the LeNet
    comparisons across frameworks include Keras on this backend too."""
    tests = ["tests/frameworks/test_adapter_contract.py", "tests/frameworks/test_keras_adapter.py",
             "tests/frameworks/test_tensorflow_adapter.py"]  # the last: its native refused on this backend
    # "keras" also names the rule mixes of the hand-written update (MIXES: chainer-torch-keras, jax-keras-canonical);
    # torch's, JAX's and PyTensor's adapters import no Keras, so their tests of a mix are the same on every backend
    others = " and ".join(f"not [{name}-" for name in ("torch", "jax", "pytensor"))
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
         "-k", f"(keras or across_frameworks) and not other_backends and not end_to_end and not deferred and {others}"],
        cwd=envs.REPO_ROOT, capture_output=True, text=True, timeout=900,
        env=envs.worker_environ("modern", {"KERAS_BACKEND": backend}))
    assert out.returncode == 0 and " passed" in out.stdout, out.stdout[-3000:] + out.stderr[-2000:]
    assert "skipped" not in out.stdout.splitlines()[-1]


@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_end_to_end_trial_on_each_backend(backend):
    from sensitivity.trial.runner import run_trial

    result = run_trial(TrialSpec(framework=FRAMEWORK, backend=None if backend == "tensorflow" else backend,
                                 dataset="digits", batch_size=32, lr=0.05, optimizer="momentum", momentum=0.9,
                                 epochs=3, threads=1))
    assert result.status == "ok", result.reason + result.stderr_tail
    assert result.accuracy > 0.85
    assert result.env["framework_version"].startswith("3.") and f"({backend} backend " in \
        result.env["framework_version"]
    assert result.spec["backend"] == result.env["backend"] == backend  # also when the spec left it to the default
    assert result.env["threads"] == (None if backend == "jax" else 1)


def test_a_trial_for_another_backend_is_refused_with_a_clear_error():
    from sensitivity.frameworks import keras_adapter

    other = next(b for b in ("jax", "torch", "tensorflow") if b != keras_adapter.BACKEND)
    with pytest.raises(RuntimeError, match=f"{keras_adapter.BACKEND} backend here, the trial asks for {other}"):
        _adapter(get_model("mlp").resolve(10), (1, 4, 4), backend=other)


def test_framework_initialiser_is_seeded_glorot_with_zero_biases():
    model, shape = get_model("lenet5").resolve(10), (1, 28, 28)
    first = _adapter(model, shape, seed=3, weights="framework")[0].get_weights()
    again = _adapter(model, shape, seed=3, weights="framework")[0].get_weights()
    other = _adapter(model, shape, seed=4, weights="framework")[0].get_weights()
    for (k, b), (k2, _), (k3, _) in zip(first, again, other):
        np.testing.assert_array_equal(k, k2)
        assert not np.array_equal(k, k3) and not b.any()
        fan_in, fan_out = (k.shape[0], k.shape[1]) if k.ndim == 2 else \
            (k[0].size, k.shape[0] * k.shape[2] * k.shape[3])
        assert np.abs(k).max() <= np.sqrt(6 / (fan_in + fan_out)) + 1e-6


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "nesterov", "adam", "rmsprop"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.01])
def test_native_compiles_keras_own_optimizer_with_its_defaults(optimizer, weight_decay):
    import keras

    from sensitivity.frameworks.keras_adapter import RuleOptimizer

    adapter, _ = _adapter(get_model("mlp").resolve(10), (1, 4, 4), optimizer=optimizer, lr=0.01, momentum=0.9,
                          weight_decay=weight_decay, lr_policy="step", stepsize=5, gamma=0.5)
    opt = adapter.model.optimizer
    assert opt is adapter.optimizer and not isinstance(opt, RuleOptimizer)
    cls = {"adam": keras.optimizers.Adam, "rmsprop": keras.optimizers.RMSprop}.get(optimizer, keras.optimizers.SGD)
    assert isinstance(opt, cls)
    config = opt.get_config()
    assert config["weight_decay"] == (weight_decay or None)  # None: no decoupled decay at all
    assert isinstance(opt._learning_rate, keras.optimizers.schedules.ExponentialDecay)
    if optimizer == "adam":
        assert config["epsilon"] == 1e-7 and not config["amsgrad"]
    elif optimizer == "rmsprop":
        assert (config["rho"], config["epsilon"], config["momentum"], config["centered"]) == (0.9, 1e-7, 0.0, False)
    else:
        assert config["momentum"] == (0.0 if optimizer == "sgd" else 0.9)
        assert config["nesterov"] == (optimizer == "nesterov")


def test_canonical_runs_the_hand_written_rule_and_compile_leaves_the_state_untouched():
    from sensitivity.frameworks.keras_adapter import RuleOptimizer

    for semantics in ("canonical", "native"):
        adapter, initial = _adapter(get_model("mlp").resolve(10), (1, 4, 4), optimizer="adam", lr=0.01,
                                    semantics=semantics)
        assert isinstance(adapter.optimizer, RuleOptimizer) == (semantics == "canonical")
        rng = np.random.default_rng(0)
        adapter.set_data(rng.random((32, 1, 4, 4), dtype=np.float32), rng.integers(0, 10, 32))
        adapter.compile(8)
        assert int(np.asarray(adapter.optimizer.iterations)) == 0
        for (k, b), (k0, b0) in zip(adapter.get_weights(), initial):
            np.testing.assert_array_equal(k, k0)
            np.testing.assert_array_equal(b, b0)


def test_numerics_reports_keras_and_backend_settings():
    from sensitivity.frameworks import keras_adapter

    adapter, _ = _adapter(get_model("mlp").resolve(10), (1, 4, 4))
    numerics = adapter.numerics()
    assert numerics["dtype"] == "float32" and numerics["loss_reduction"] == "mean"
    assert numerics["keras_backend"] == keras_adapter.BACKEND
    assert numerics["keras_loss_reduction"] == "sum_over_batch_size"
    expected = {"tensorflow": "tensor_float_32_execution", "torch": "cudnn_tf32",
                "jax": "jax_default_matmul_precision"}[keras_adapter.BACKEND]
    assert expected in numerics
