"""Float64 numpy reference of the model specs, against which every adapter is tested.

`forward` covers every layer type (Caffe's ceil pooling included, averages over the in-image part of a
window); `loss_and_grads` covers models of Flatten, Dense and ReLU, enough to hold every adapter's
optimizer to `sensitivity.core.optim.reference_step` step by step.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from sensitivity.core.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, pooled_size
from sensitivity.core.optim import reference_step


def forward(model: ModelSpec, weights: list, x: np.ndarray) -> np.ndarray:
    """Logits in float64, evaluation mode (dropout is the identity)."""
    h = np.asarray(x, np.float64)
    params = iter(weights)
    for layer in model.layers:
        if isinstance(layer, Conv):
            kernel, bias = (np.asarray(a, np.float64) for a in next(params))
            p = layer.pad
            h = np.pad(h, ((0, 0), (0, 0), (p, p), (p, p)))
            windows = sliding_window_view(h, (layer.kernel, layer.kernel), axis=(2, 3))
            windows = windows[:, :, ::layer.stride, ::layer.stride]
            h = np.einsum("nchwij,ocij->nohw", windows, kernel, optimize=True) + bias[None, :, None, None]
        elif isinstance(layer, Pool):
            h = _pool(h, layer)
        elif isinstance(layer, Dense):
            kernel, bias = (np.asarray(a, np.float64) for a in next(params))
            h = h @ kernel + bias
        elif isinstance(layer, ReLU):
            h = np.maximum(h, 0.0)
        elif isinstance(layer, Flatten):
            h = h.reshape(len(h), -1)
        elif not isinstance(layer, Dropout):
            raise TypeError(f"no reference for {layer}")
    return h


def _pool(h: np.ndarray, layer: Pool) -> np.ndarray:
    n, c, height, width = h.shape
    out_h = pooled_size(height, layer.kernel, layer.stride, layer.ceil)
    out_w = pooled_size(width, layer.kernel, layer.stride, layer.ceil)
    pad_h = max((out_h - 1) * layer.stride + layer.kernel - height, 0)
    pad_w = max((out_w - 1) * layer.stride + layer.kernel - width, 0)
    padded = np.pad(h, ((0, 0), (0, 0), (0, pad_h), (0, pad_w)), constant_values=np.nan)
    windows = sliding_window_view(padded, (layer.kernel, layer.kernel), axis=(2, 3))
    windows = windows[:, :, ::layer.stride, ::layer.stride][:, :, :out_h, :out_w]
    reduce = np.nanmax if layer.kind == "max" else np.nanmean
    return reduce(windows, axis=(4, 5))


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> float:
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(y)), y].mean())


def loss_and_grads(model: ModelSpec, weights: list, x: np.ndarray, y: np.ndarray, magnitudes: bool = False):
    """Mean cross-entropy, its gradients [(d_kernel, d_bias)] and its gradient with respect to the
    input (shaped as x), for a Flatten/Dense/ReLU model. With `magnitudes`, also the sums of the absolute
    terms that make each gradient [(|in|' |delta|, sum |delta|)], each layer's |delta| itself the sum of its
    terms' magnitudes through the layers above (cancellation there does not shrink it): the scale of the
    gradient's float32 rounding error."""
    h = np.asarray(x, np.float64).reshape(len(x), -1)
    activations, params = [], iter(weights)
    for layer in model.layers:
        if isinstance(layer, Dense):
            kernel, bias = (np.asarray(a, np.float64) for a in next(params))
            activations.append(("dense", h, kernel))
            h = h @ kernel + bias
        elif isinstance(layer, ReLU):
            activations.append(("relu", h, None))
            h = np.maximum(h, 0.0)
        elif not isinstance(layer, Flatten):
            raise TypeError(f"loss_and_grads supports Flatten, Dense and ReLU, not {layer}")
    loss = cross_entropy(h, y)
    probs = np.exp(h - h.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    delta = probs
    delta[np.arange(len(y)), y] -= 1.0
    delta /= len(y)
    grads, sizes = [], []
    scale = np.abs(delta)  # the magnitude of delta's terms, carried back beside it (only when asked)
    for kind, inputs, kernel in reversed(activations):
        if kind == "dense":
            grads.append((inputs.T @ delta, delta.sum(axis=0)))
            if magnitudes:  # each layer's delta rounds to the sum of its terms, not to its own (cancelled) size
                sizes.append((np.abs(inputs).T @ scale, scale.sum(axis=0)))
                scale = scale @ np.abs(kernel).T
            delta = delta @ kernel.T
        else:
            delta = delta * (inputs > 0)
            scale = scale * (inputs > 0) if magnitudes else scale
    if magnitudes:
        return loss, grads[::-1], delta.reshape(np.shape(x)), sizes[::-1]
    return loss, grads[::-1], delta.reshape(np.shape(x))


def native_step(framework: str, optimizer: str, weights: list, grads: list, state: dict, lr: float,
                momentum: float, weight_decay: float) -> list:
    """One update of `framework`'s own optimizer class in float64, transcribed from its documentation
    (docs/semantics.md gives each source); `grads` are of the data loss, `state` from `native_state`.
    The contract holds every native adapter to this, and `optim.rule_update` under each framework's
    `semantics.NATIVE` rule to it as well."""
    if framework in ("theano", "pytensor", "caffe"):  # hand-written or Caffe's own: the canonical update
        return reference_step(optimizer, weights, grads, state, lr, momentum, weight_decay)
    mu, wd = momentum, weight_decay
    keras = framework in ("tensorflow", "keras")
    new = []
    if optimizer == "adam":
        state["t"] += 1
    for i, (w, g) in enumerate(zip(weights, grads)):
        w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
        if keras:  # Keras 3: variable -= variable * weight_decay * lr, then the update
            w = w - w * wd * lr
        else:  # torch weight_decay, optax.add_decayed_weights, MXNet wd, Chainer's WeightDecay hook
            g = g + wd * w
        w = _native_update(framework, optimizer, w, g, state, i, lr, mu, wd)
        new.append(w)
    return new


def _native_update(framework: str, optimizer: str, w, g, state: dict, i: int, lr: float, mu: float, wd: float):
    if optimizer == "sgd":  # every framework: w -= lr*g
        return w - lr * g
    if optimizer == "momentum":
        if framework in ("torch", "jax"):  # torch.optim.SGD, optax.trace: buf = mu*buf + g; w -= lr*buf
            state["v"][i] = mu * state["v"][i] + g
            return w - lr * state["v"][i]
        # Keras SGD: m = mu*m - lr*g; w += m.  MXNet SGD: mom = mu*mom + lr*g; w -= mom (the same, negated).
        # Chainer MomentumSGD: v = mu*v - lr*g; w += v.
        state["v"][i] = mu * state["v"][i] - lr * g
        return w + state["v"][i]
    if optimizer == "nesterov":
        if framework in ("torch", "jax"):  # buf = mu*buf + g; w -= lr*(g + mu*buf)
            state["v"][i] = mu * state["v"][i] + g
            return w - lr * (g + mu * state["v"][i])
        if framework == "mxnet":  # NAG as MXNet 1.9.1 runs it (nag_mom_update, out=weight): Caffe's step of
            # the weight, then the velocity, whose weight-decay term reads the weight just moved
            moved = w + mu * mu * state["v"][i] - (1 + mu) * lr * g
            state["v"][i] = mu * state["v"][i] - lr * (g + wd * (moved - w))  # g holds wd*w: now wd*moved
            return moved
        state["v"][i] = mu * state["v"][i] - lr * g
        if framework == "chainer":  # NesterovAG: v = mu*v - lr*g; w += mu^2*v - (1+mu)*lr*g
            return w + mu * mu * state["v"][i] - (1 + mu) * lr * g
        return w + mu * state["v"][i] - lr * g  # Keras SGD(nesterov=True)
    if optimizer == "adam":
        t = state["t"]
        state["m"][i] = 0.9 * state["m"][i] + 0.1 * g
        state["s"][i] = 0.999 * state["s"][i] + 0.001 * g * g
        if framework in ("torch", "jax"):  # eps 1e-8 added to the bias-corrected root
            m_hat, s_hat = state["m"][i] / (1 - 0.9 ** t), state["s"][i] / (1 - 0.999 ** t)
            return w - lr * m_hat / (np.sqrt(s_hat) + 1e-8)
        eps = 1e-7 if framework in ("tensorflow", "keras") else 1e-8  # Keras 1e-7; MXNet, Chainer 1e-8
        alpha = lr * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)  # the correction folded into the rate
        return w - alpha * state["m"][i] / (np.sqrt(state["s"][i]) + eps)
    if optimizer == "rmsprop":
        rho = 0.99 if framework in ("torch", "chainer") else 0.9  # torch alpha, Chainer alpha; others 0.9
        state["s"][i] = rho * state["s"][i] + (1 - rho) * g * g
        if framework in ("torch", "chainer"):  # eps 1e-8 outside the root
            return w - lr * g / (np.sqrt(state["s"][i]) + 1e-8)
        eps = 1e-7 if framework in ("tensorflow", "keras") else 1e-8  # inside the root: Keras, optax, MXNet
        return w - lr * g / np.sqrt(state["s"][i] + eps)
    raise ValueError(f"unknown optimizer {optimizer!r}")


def native_state(optimizer: str, weights: list) -> dict:
    """Zeroed optimizer state for `native_step` (velocities v; Adam's m, s and step t; RMSprop's s)."""
    zeros = lambda: [np.zeros_like(w, dtype=np.float64) for w in weights]  # noqa: E731
    return {"v": zeros(), "m": zeros(), "s": zeros(), "t": 0}
