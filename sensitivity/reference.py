"""Float64 numpy reference of the model specs, against which every adapter is tested.

`forward` covers every layer type (Caffe's ceil pooling included, averages over the in-image part of a
window); `loss_and_grads` covers models of Flatten, Dense and ReLU, enough to hold every adapter's
optimizer to `sensitivity.optim.reference_step` step by step.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from sensitivity.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, pooled_size


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
    terms that make each gradient [(|in|' |delta|, sum |delta|)]: the scale of its rounding error."""
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
    for kind, inputs, kernel in reversed(activations):
        if kind == "dense":
            grads.append((inputs.T @ delta, delta.sum(axis=0)))
            if magnitudes:  # two more products per layer: only when asked
                sizes.append((np.abs(inputs).T @ np.abs(delta), np.abs(delta).sum(axis=0)))
            delta = delta @ kernel.T
        else:
            delta = delta * (inputs > 0)
    if magnitudes:
        return loss, grads[::-1], delta.reshape(np.shape(x)), sizes[::-1]
    return loss, grads[::-1], delta.reshape(np.shape(x))
