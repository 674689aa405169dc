"""The training formulas, written once: Caffe's learning-rate policies, the canonical float64 reference,
and `rule_update`, the hand-written update of every `semantics.Rule` that the adapters run on their own
tensors (canonical trials and ablation points; native trials run the frameworks' own classes).

The canonical formulas (`reference_step`, written out plainly as the independent reference):
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


def slot_names(optimizer: str) -> tuple:
    """The state each weight keeps under `optimizer`: v (velocity, or Adam's first moment), s (a mean of
    squared gradients)."""
    return {"sgd": (), "momentum": ("v",), "nesterov": ("v",), "adam": ("v", "s"), "rmsprop": ("s",)}[optimizer]


def rule_update(rule, optimizer: str, w, g, slots: dict, lr, momentum, weight_decay, t=1, sqrt=np.sqrt):
    """One weight's update under a `semantics.Rule`, written with arithmetic operators and `sqrt` alone,
    so that numpy (in float64: the reference of every rule), torch, TensorFlow, JAX, MXNet, Chainer, Keras
    and the graph frameworks' symbolic variables all run the same formulas. `g` is the gradient of the
    data loss, `slots` this weight's state (`slot_names`), `t` the step number from 1 (Adam's bias
    correction). Returns (new weight, new slots)."""
    mu = momentum
    decays = not isinstance(weight_decay, (int, float)) or weight_decay != 0  # symbolic: always applied
    if decays and rule.weight_decay == "l2":
        g = g + weight_decay * w
    base = w - (lr * weight_decay) * w if decays and rule.weight_decay == "decoupled" else w
    if optimizer == "sgd":
        return base - lr * g, {}
    if optimizer in ("momentum", "nesterov"):
        form = rule.momentum if optimizer == "momentum" else rule.nesterov
        if form == "outside":  # b = mu*b + g; w -= lr*b (nesterov: w -= lr*(g + mu*b))
            b = mu * slots["v"] + g
            return base - lr * (b if optimizer == "momentum" else g + mu * b), {"v": b}
        if form == "mxnet":  # MXNet 1.9's NAG: Caffe's step of w, then v, its decay term at the moved w
            moved = base + (mu * mu) * slots["v"] - ((1 + mu) * lr) * g
            decayed = weight_decay * (moved - w) if decays and rule.weight_decay == "l2" else 0.0
            return moved, {"v": mu * slots["v"] - lr * (g + decayed)}
        v = mu * slots["v"] - lr * g  # v = mu*v - lr*g
        if optimizer == "momentum":
            return base + v, {"v": v}
        if form == "inside":  # w += mu*v - lr*g
            return base + mu * v - lr * g, {"v": v}
        return base + (mu * mu) * v - ((1 + mu) * lr) * g, {"v": v}  # chainer's NesterovAG
    if optimizer == "adam":
        m = ADAM_BETA1 * slots["v"] + (1 - ADAM_BETA1) * g
        s = ADAM_BETA2 * slots["s"] + (1 - ADAM_BETA2) * g * g
        c1, c2 = 1 - ADAM_BETA1 ** t, 1 - ADAM_BETA2 ** t
        if rule.adam_eps == "corrected":
            step = lr * (m / c1) / (sqrt(s / c2) + rule.adam_epsilon)
        else:  # epsilon added to the uncorrected root, the correction folded into the rate
            step = (lr * c2 ** 0.5 / c1) * m / (sqrt(s) + rule.adam_epsilon)
        return base - step, {"v": m, "s": s}
    if optimizer == "rmsprop":
        s = rule.rho * slots["s"] + (1 - rule.rho) * g * g
        denominator = sqrt(s) + rule.rmsprop_epsilon if rule.rmsprop_eps == "outside" else sqrt(s + rule.rmsprop_epsilon)
        return base - lr * g / denominator, {"s": s}
    raise ValueError(f"unknown optimizer {optimizer!r}")


def graph_updates(rule, optimizer: str, weights: list, grads: list, lr, momentum, weight_decay, slots: dict,
                  step, sqrt) -> list:
    """`rule_update` as symbolic (variable, new value) pairs, for the graph frameworks (Theano, PyTensor):
    `grads` of the data loss; `slots` maps each slot name to the shared variables of every weight; `step`
    is the shared Adam step count."""
    updates = []
    t = step + 1
    if optimizer == "adam":
        updates.append((step, t))
    for i, (w, g) in enumerate(zip(weights, grads)):
        new, state = rule_update(rule, optimizer, w, g, {name: slots[name][i] for name in slots}, lr, momentum,
                                 weight_decay, t, sqrt)
        updates += [(slots[name][i], value) for name, value in state.items()] + [(w, new)]
    return updates
