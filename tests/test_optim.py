"""Canonical learning-rate policies and optimizer formulas. Portable: numpy only."""
import math

import numpy as np
import pytest

from sensitivity.core import reference
from sensitivity.core.models import get_model, init_weights
from sensitivity.core.optim import init_state, lr_schedule, reference_step
from sensitivity.core.spec import TrialSpec

pytestmark = pytest.mark.portable


def spec(**kw):
    return TrialSpec(framework="torch", dataset="digits", **kw)


def caffe_rate(policy, it, base=0.1, gamma=0.5, power=0.75, stepsize=3, stepvalues=(2, 5), total=12):
    """SGDSolver::GetLearningRate of Caffe's sgd_solver.cpp, one iteration at a time (cosine: SGDR's)."""
    if policy == "fixed":
        return base
    if policy == "step":
        return base * gamma ** (it // stepsize)
    if policy == "multistep":
        current_step = 0  # Caffe advances it while it >= stepvalue[current_step]
        while current_step < len(stepvalues) and it >= stepvalues[current_step]:
            current_step += 1
        return base * gamma ** current_step
    if policy == "inv":
        return base * (1 + gamma * it) ** -power
    if policy == "exp":
        return base * gamma ** it
    return base * 0.5 * (1 + math.cos(math.pi * it / total))


@pytest.mark.parametrize("policy", ["fixed", "step", "multistep", "inv", "exp", "cosine"])
def test_lr_policies_follow_caffe_at_every_step(policy):
    """Every iteration, the change points of step (3, 6, 9) and multistep (2, 5) included."""
    rates = lr_schedule(spec(lr=0.1, lr_policy=policy, gamma=0.5, power=0.75, stepsize=3, stepvalues=(2, 5)), 12)
    expected = [caffe_rate(policy, it) for it in range(12)]
    np.testing.assert_allclose(rates, expected, rtol=1e-12)
    if policy in ("step", "multistep"):
        assert len(set(rates.tolist())) == (4 if policy == "step" else 3)


def test_caffe_lenet_inv_schedule_at_10000_iterations():
    rates = lr_schedule(spec(lr=0.01, lr_policy="inv", gamma=1e-4, power=0.75), 10_001)
    assert rates[10_000] == pytest.approx(0.01 * 2 ** -0.75)


def test_momentum_keeps_the_rate_inside_the_velocity():
    w, g = [np.array([1.0])], [np.array([1.0])]
    state = init_state("momentum", w)
    w = reference_step("momentum", w, g, state, lr=1.0, momentum=0.9, weight_decay=0.0)
    w = reference_step("momentum", w, g, state, lr=0.1, momentum=0.9, weight_decay=0.0)
    # canonical: v1 = -1, v2 = 0.9*-1 - 0.1 = -1.0; PyTorch's form would give -0.1*(0.9*1 + 1) = -0.19
    assert w[0][0] == pytest.approx(1.0 - 1.0 - 1.0)


def test_weight_decay_is_the_l2_gradient():
    w = [np.array([2.0])]
    new = reference_step("sgd", w, [np.array([0.0])], {}, lr=0.1, momentum=0.0, weight_decay=0.5)
    assert new[0][0] == pytest.approx(2.0 - 0.1 * 0.5 * 2.0)


def test_nesterov_equals_its_lookahead_form():
    w, g = [np.array([1.0])], [np.array([0.5])]
    state = init_state("nesterov", w)
    state["v"][0][:] = 0.2
    new = reference_step("nesterov", w, g, state, lr=0.1, momentum=0.9, weight_decay=0.0)
    v_new = 0.9 * 0.2 - 0.1 * 0.5
    assert new[0][0] == pytest.approx(1.0 + 0.9 * v_new - 0.1 * 0.5)


def test_adam_first_step_is_lr_times_sign():
    state = init_state("adam", [np.zeros(2)])
    new = reference_step("adam", [np.zeros(2)], [np.array([3.0, -0.2])], state, lr=0.01, momentum=0, weight_decay=0)
    np.testing.assert_allclose(new[0], [-0.01, 0.01], rtol=1e-6)


def test_reference_gradients_match_finite_differences():
    model = get_model("mlp").resolve(3)
    weights = init_weights(model, (4,), 3, seed=0)
    rng = np.random.default_rng(0)
    x, y = rng.random((5, 4)), rng.integers(0, 3, 5)
    _, grads, input_grad = reference.loss_and_grads(model, weights, x, y)
    kernel = np.asarray(weights[0][0], np.float64)
    eps = 1e-6
    for index in [(0, 0), (3, 100)]:
        bumped = [(k.astype(np.float64), b) for k, b in weights]
        bumped[0] = (kernel.copy(), weights[0][1])
        bumped[0][0][index] += eps
        numeric = (reference.cross_entropy(reference.forward(model, bumped, x), y)
                   - reference.cross_entropy(reference.forward(model, weights, x), y)) / eps
        assert grads[0][0][index] == pytest.approx(numeric, rel=1e-3, abs=1e-7)
    assert input_grad.shape == x.shape
