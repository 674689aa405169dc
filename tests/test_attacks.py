"""FGSM and PGD against the float64 numpy reference model: the attacks' own arithmetic, in any environment.

The adapters' input gradients are proven equal to the reference's by the contract suite, so an attack
right here is right in every framework; tests/sweep/test_robustness.py runs them through real workers.
"""
import numpy as np
import pytest

from sensitivity.core import reference
from sensitivity.trial import attacks
from sensitivity.core.correctness import unpack
from sensitivity.core.models import get_model, init_weights

pytestmark = pytest.mark.portable


class ReferenceModel:
    """The two members an attack uses, computed by the numpy reference."""

    def __init__(self, model, weights):
        self.model, self.weights, self.gradients = model, weights, 0

    def predict(self, x):
        return reference.forward(self.model, self.weights, x)

    def input_gradient(self, x, y):
        self.gradients += 1
        _, _, grad_of_mean = reference.loss_and_grads(self.model, self.weights, x, y)
        return (grad_of_mean * len(y)).astype(x.dtype)

    def loss(self, x, y):
        return reference.cross_entropy(self.predict(x), y)


@pytest.fixture(scope="module")
def trained():
    """An MLP on 4x4 inputs trained by plain gradient descent on the reference to fit two classes."""
    rng = np.random.default_rng(0)
    x = rng.random((200, 1, 4, 4), dtype=np.float32)
    y = (x[:, 0, :2].mean(axis=(1, 2)) > x[:, 0, 2:].mean(axis=(1, 2))).astype(np.int64)
    model = get_model("mlp").resolve(2)
    weights = init_weights(model, (1, 4, 4), 2, 0)
    for _ in range(300):
        _, grads, _ = reference.loss_and_grads(model, weights, x, y)
        weights = [(k - 0.5 * dk, b - 0.5 * db) for (k, b), (dk, db) in zip(weights, grads)]
    target = ReferenceModel(model, weights)
    assert attacks.accuracy(target, x, y) > 0.9
    return target, x, y


@pytest.mark.parametrize("attack", attacks.ATTACKS)
def test_examples_stay_in_the_ball_and_the_data_range(trained, attack):
    target, x, y = trained
    adv = attacks.ATTACK_FUNCTIONS[attack](target, x, y, 0.1, 0.0, 1.0, np.random.default_rng(0))
    assert adv.shape == x.shape and adv.dtype == x.dtype
    assert np.max(np.abs(adv - x)) <= 0.1 + 1e-6
    assert adv.min() >= 0.0 and adv.max() <= 1.0


def test_fgsm_is_one_signed_gradient_step(trained):
    target, x, y = trained
    gradient = target.input_gradient(x, y)
    expected = np.clip(x + 0.05 * np.sign(gradient), 0, 1)
    np.testing.assert_array_equal(attacks.fgsm(target, x, y, 0.05, 0.0, 1.0), expected)


@pytest.mark.parametrize("attack", attacks.ATTACKS)
def test_eps_zero_leaves_the_inputs_alone(trained, attack):
    target, x, y = trained
    adv = attacks.ATTACK_FUNCTIONS[attack](target, x, y, 0.0, 0.0, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(adv, x)


def test_attacks_raise_the_loss_and_pgd_more_than_fgsm(trained):
    target, x, y = trained
    clean = target.loss(x, y)
    by_fgsm = target.loss(attacks.fgsm(target, x, y, 0.1, 0.0, 1.0), y)
    by_pgd = target.loss(attacks.pgd(target, x, y, 0.1, 0.0, 1.0, np.random.default_rng(0)), y)
    assert clean < by_fgsm <= by_pgd


def test_accuracy_falls_as_eps_grows(trained):
    target, x, y = trained
    accuracies = [attacks.accuracy(target, attacks.pgd(target, x, y, eps, 0.0, 1.0, np.random.default_rng(0)), y)
                  for eps in (0.0, 0.05, 0.1, 0.2)]
    assert accuracies == sorted(accuracies, reverse=True) and accuracies[-1] < accuracies[0] - 0.3


def test_pgd_takes_its_steps_in_gradient_batches_and_is_reproducible(trained):
    target, x, y = trained
    target.gradients = 0
    first = attacks.pgd(target, x, y, 0.1, 0.0, 1.0, np.random.default_rng(5))
    assert target.gradients == attacks.PGD_STEPS  # 200 samples: one batch of GRADIENT_BATCH per step
    np.testing.assert_array_equal(first, attacks.pgd(target, x, y, 0.1, 0.0, 1.0, np.random.default_rng(5)))


def test_saved_examples_are_evaluated_per_attack_and_eps(trained, tmp_path):
    target, x, y = trained
    path = tmp_path / "examples.npz"
    np.savez(path, fgsm_0=x, fgsm_1=np.zeros_like(x), pgd_0=x, pgd_1=x)
    out, correct = attacks.evaluate_examples(target, str(path), y, [0.0, 0.1])
    clean = attacks.accuracy(target, x, y)
    assert out["fgsm"][0] == clean and out["pgd"] == [clean, clean]
    assert out["fgsm"][1] == attacks.accuracy(target, np.zeros_like(x), y)
    by_sample = unpack(correct["fgsm"][1])  # which samples it got right, one bit each
    assert len(by_sample) == len(y) and by_sample.mean() == out["fgsm"][1]
    np.testing.assert_array_equal(by_sample, np.argmax(target.predict(np.zeros_like(x)), axis=1) == y)
