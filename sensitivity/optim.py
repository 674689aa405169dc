"""The canonical training semantics, written once: learning-rate policies and a float64 numpy reference.

Adapters implement these formulas natively; the equivalence tests hold every adapter to `reference_step`.
- Weight decay is the L2 term (lambda/2)|w|^2 in the loss, so lambda*w joins the gradient.
- Momentum keeps the rate inside the velocity: v = mu*v - lr*g; w += v (Caffe's form).
  Nesterov in the same form: v' = mu*v - lr*g; w += -mu*v + (1+mu)*v'.
- Adam: beta1 0.9, beta2 0.999, epsilon 1e-8 outside the square root, bias-corrected.
- RMSprop: s = rho*s + (1-rho)*g^2; w -= lr*g/(sqrt(s)+eps), rho 0.9, eps 1e-8.
"""
from __future__ import annotations

import math

import numpy as np

ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO = 0.9, 0.999, 1e-8, 0.9


def lr_schedule(spec, total_steps: int) -> np.ndarray:
    """The learning rate of every optimizer step 0..total_steps-1 under the spec's Caffe policy."""
    it = np.arange(total_steps, dtype=np.float64)
    policy, base, gamma = spec.lr_policy, spec.lr, spec.gamma
    if policy == "fixed":
        rates = np.full(total_steps, base)
    elif policy == "step":
        rates = base * gamma ** np.floor(it / spec.stepsize)
    elif policy == "multistep":
        passed = np.searchsorted(np.asarray(spec.stepvalues), it, side="right")
        rates = base * gamma ** passed
    elif policy == "inv":
        rates = base * (1.0 + gamma * it) ** (-spec.power)
    elif policy == "exp":
        rates = base * gamma ** it
    elif policy == "cosine":
        rates = base * 0.5 * (1.0 + np.cos(math.pi * it / max(total_steps, 1)))
    else:
        raise ValueError(f"unknown lr_policy {policy!r}")
    return rates.astype(np.float64)


def init_state(optimizer: str, weights: list) -> dict:
    """Zeroed optimizer slots for a list of numpy arrays."""
    zeros = lambda: [np.zeros_like(w, dtype=np.float64) for w in weights]  # noqa: E731
    if optimizer in ("momentum", "nesterov"):
        return {"v": zeros()}
    if optimizer == "adam":
        return {"m": zeros(), "s": zeros(), "t": 0}
    if optimizer == "rmsprop":
        return {"s": zeros()}
    return {}


def reference_step(optimizer: str, weights: list, grads: list, state: dict, lr: float,
                   momentum: float, weight_decay: float) -> list:
    """One canonical update in float64; `grads` are of the loss without the L2 term."""
    new = []
    if optimizer == "adam":
        state["t"] += 1
    for i, (w, g) in enumerate(zip(weights, grads)):
        w = np.asarray(w, np.float64)
        g = np.asarray(g, np.float64) + weight_decay * w
        if optimizer == "sgd":
            w = w - lr * g
        elif optimizer == "momentum":
            state["v"][i] = momentum * state["v"][i] - lr * g
            w = w + state["v"][i]
        elif optimizer == "nesterov":
            v_prev = state["v"][i]
            state["v"][i] = momentum * v_prev - lr * g
            w = w - momentum * v_prev + (1 + momentum) * state["v"][i]
        elif optimizer == "adam":
            t = state["t"]
            state["m"][i] = ADAM_BETA1 * state["m"][i] + (1 - ADAM_BETA1) * g
            state["s"][i] = ADAM_BETA2 * state["s"][i] + (1 - ADAM_BETA2) * g * g
            m_hat = state["m"][i] / (1 - ADAM_BETA1 ** t)
            s_hat = state["s"][i] / (1 - ADAM_BETA2 ** t)
            w = w - lr * m_hat / (np.sqrt(s_hat) + EPSILON)
        elif optimizer == "rmsprop":
            state["s"][i] = RMSPROP_RHO * state["s"][i] + (1 - RMSPROP_RHO) * g * g
            w = w - lr * g / (np.sqrt(state["s"][i]) + EPSILON)
        else:
            raise ValueError(f"unknown optimizer {optimizer!r}")
        new.append(w)
    return new


def graph_updates(optimizer: str, weights: list, grads: list, lr, momentum, slots: tuple, sqrt) -> list:
    """The canonical update as symbolic (variable, new value) pairs, for the graph frameworks (Theano,
    PyTensor): `grads` include the L2 term; `slots` are the shared variables (v, s, t): velocities or
    first moments, second moments, Adam's step; `sqrt` is the library's."""
    velocities, squares, step = slots
    updates = []
    if optimizer == "adam":
        t = step + 1
        updates.append((step, t))
        correction1, correction2 = 1 - ADAM_BETA1 ** t, 1 - ADAM_BETA2 ** t
    for i, (w, g) in enumerate(zip(weights, grads)):
        if optimizer == "sgd":
            updates.append((w, w - lr * g))
        elif optimizer in ("momentum", "nesterov"):  # v = mu*v - lr*g; w += v (nesterov: w += mu*v - lr*g)
            v = momentum * velocities[i] - lr * g
            updates += [(velocities[i], v), (w, w + (v if optimizer == "momentum" else momentum * v - lr * g))]
        elif optimizer == "adam":
            m = ADAM_BETA1 * velocities[i] + (1 - ADAM_BETA1) * g
            s = ADAM_BETA2 * squares[i] + (1 - ADAM_BETA2) * g * g
            updates += [(velocities[i], m), (squares[i], s),
                        (w, w - lr * (m / correction1) / (sqrt(s / correction2) + EPSILON))]
        elif optimizer == "rmsprop":
            s = RMSPROP_RHO * squares[i] + (1 - RMSPROP_RHO) * g * g
            updates += [(squares[i], s), (w, w - lr * g / (sqrt(s) + EPSILON))]
        else:
            raise ValueError(f"unknown optimizer {optimizer!r}")
    return updates
