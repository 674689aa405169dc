"""Keras-specific checks beyond the shared contract: the contract under every backend (each in its own
process, since KERAS_BACKEND is read at import), a trial end to end per backend, the backend check and
the Keras initialiser."""
import subprocess
import sys

import numpy as np
import pytest

from sensitivity import envs, frameworks
from sensitivity.models import get_model, init_weights
from sensitivity.spec import TrialSpec

FRAMEWORK = "keras"
pytestmark = pytest.mark.skipif(not frameworks.importable(FRAMEWORK), reason=f"no {FRAMEWORK} here")



def _adapter(model, shape, seed=0, weights="neutral", **spec):
    adapter = frameworks.load_adapter(FRAMEWORK)
    adapter.setup(threads=1, device="cpu", seed=seed)
    initial = init_weights(model, shape, 10, 0) if weights == "neutral" else None  # seed: the framework's
    adapter.build(model, shape, 10, initial, TrialSpec(framework=FRAMEWORK, dataset="digits", **spec))
    return adapter, initial


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_contract_and_these_checks_pass_under_other_backends(backend):
    """The in-process tests here and the contract run on the default backend (tensorflow); the LeNet
    comparisons across frameworks include Keras on this backend too."""
    tests = ["tests/frameworks/test_adapter_contract.py", "tests/frameworks/test_keras_adapter.py"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning",
         "-k", "(keras or across_frameworks) and not other_backends and not end_to_end and not deferred"],
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
