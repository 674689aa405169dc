"""PyTorch adapter: an nn.Sequential built from the ModelSpec, data on the device, the canonical optimizer.

PyTorch's own SGD keeps the learning rate outside the velocity (v = mu*v + g; w -= lr*v), which differs
from the canonical form once the rate changes, so the update is written here with foreach ops.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sensitivity.frameworks.base import EpochStats
from sensitivity.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU
from sensitivity.optim import ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO


class TorchAdapter:
    name = "torch"

    def version(self) -> str:
        return torch.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:  # allowed once per process: a warm worker keeps the first setting
            pass
        torch.manual_seed(seed)
        self.device = torch.device("cpu" if device == "cpu" else "cuda" + device[3:])
        self.check_every = 1 if self.device.type == "cpu" else 25  # a finite-loss check syncs the device

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec) -> None:
        in_channels = input_shape[0]
        layers, in_features = [], None
        for layer, shape in zip(model.layers, model.shapes(input_shape)):
            if isinstance(layer, Conv):
                layers.append(nn.Conv2d(in_channels, layer.out_channels, layer.kernel, layer.stride, layer.pad))
            elif isinstance(layer, Pool):
                pool = nn.MaxPool2d if layer.kind == "max" else nn.AvgPool2d
                layers.append(pool(layer.kernel, layer.stride, ceil_mode=layer.ceil))
            elif isinstance(layer, Dense):
                layers.append(nn.Linear(in_features, layer.units))
            elif isinstance(layer, ReLU):
                layers.append(nn.ReLU())
            elif isinstance(layer, Flatten):
                layers.append(nn.Flatten())
            elif isinstance(layer, Dropout):
                layers.append(nn.Dropout(layer.rate))
            in_channels, in_features = shape[0], shape[0]
        self.model = nn.Sequential(*layers).to(self.device)
        self.weighted = [m for m in self.model if isinstance(m, (nn.Conv2d, nn.Linear))]
        if weights is not None:
            self._load(weights)
        self.params = [p for m in self.weighted for p in (m.weight, m.bias)]
        self.optimizer = CanonicalOptimizer(self.params, spec.optimizer, spec.momentum, spec.weight_decay)

    def _load(self, weights) -> None:
        with torch.no_grad():
            for module, (kernel, bias) in zip(self.weighted, weights):
                kernel = kernel.T if isinstance(module, nn.Linear) else kernel
                module.weight.copy_(torch.from_numpy(np.ascontiguousarray(kernel)))
                module.bias.copy_(torch.from_numpy(bias))

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = torch.from_numpy(x_train).to(self.device)
        self.y = torch.from_numpy(y_train).to(self.device)

    def compile(self, batch_size: int) -> None:
        pass  # eager execution: nothing to compile

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        self.model.train()
        steps, batch = order.shape
        perm = torch.from_numpy(order.reshape(-1)).to(self.device)
        xs, ys = self.x[perm], self.y[perm]  # one gather per epoch, then contiguous slices
        total, pending = 0.0, []
        for i in range(steps):
            loss = F.cross_entropy(self.model(xs[i * batch:(i + 1) * batch]), ys[i * batch:(i + 1) * batch])
            for p in self.params:
                p.grad = None
            loss.backward()
            pending.append(loss.detach())
            if (i + 1) % self.check_every == 0 or i == steps - 1:
                values = torch.stack(pending).double().cpu().numpy()  # one device sync per group
                bad = np.flatnonzero(~np.isfinite(values))
                if bad.size:  # the first non-finite loss among those not yet read
                    return EpochStats(float("nan"), i + 2 - len(values) + int(bad[0]), diverged=True)
                total += float(values.sum())
                pending = []
            self.optimizer.step(float(lrs[i]))
        return EpochStats(total / max(steps, 1), steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        self.model.eval()
        with torch.no_grad():
            return self.model(torch.from_numpy(x).to(self.device)).cpu().numpy()

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def get_weights(self) -> list:
        out = []
        for module in self.weighted:
            kernel = module.weight.detach().cpu().numpy()
            out.append((kernel.T.copy() if isinstance(module, nn.Linear) else kernel,
                        module.bias.detach().cpu().numpy()))
        return out

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        self.model.eval()
        xt = torch.from_numpy(x).to(self.device).requires_grad_(True)
        loss = F.cross_entropy(self.model(xt), torch.from_numpy(y).to(self.device), reduction="sum")
        (grad,) = torch.autograd.grad(loss, xt)
        return grad.cpu().numpy()


class CanonicalOptimizer:
    """The canonical update (sensitivity.optim) on torch tensors, with foreach ops and no autograd."""

    def __init__(self, params: list, optimizer: str, momentum: float, weight_decay: float):
        self.params, self.kind, self.mu, self.wd = params, optimizer, momentum, weight_decay
        zeros = lambda: [torch.zeros_like(p) for p in params]  # noqa: E731
        self.v = zeros() if optimizer in ("momentum", "nesterov", "adam") else None
        self.s = zeros() if optimizer in ("adam", "rmsprop") else None
        self.t = 0

    @torch.no_grad()
    def step(self, lr: float) -> None:
        params = self.params
        grads = [p.grad for p in params]
        if self.wd:
            grads = torch._foreach_add(grads, params, alpha=self.wd)
        if self.kind == "sgd":
            torch._foreach_add_(params, grads, alpha=-lr)
        elif self.kind == "momentum":  # v = mu*v - lr*g; w += v
            torch._foreach_mul_(self.v, self.mu)
            torch._foreach_add_(self.v, grads, alpha=-lr)
            torch._foreach_add_(params, self.v)
        elif self.kind == "nesterov":  # w += -mu*v_prev + (1+mu)*v_new, i.e. w += mu*v_new - lr*g
            torch._foreach_mul_(self.v, self.mu)
            torch._foreach_add_(self.v, grads, alpha=-lr)
            torch._foreach_add_(params, self.v, alpha=self.mu)
            torch._foreach_add_(params, grads, alpha=-lr)
        elif self.kind == "adam":
            self.t += 1
            torch._foreach_lerp_(self.v, grads, 1 - ADAM_BETA1)
            torch._foreach_mul_(self.s, ADAM_BETA2)
            torch._foreach_addcmul_(self.s, grads, grads, value=1 - ADAM_BETA2)
            denom = torch._foreach_sqrt(torch._foreach_div(self.s, 1 - ADAM_BETA2 ** self.t))
            torch._foreach_add_(denom, EPSILON)
            torch._foreach_addcdiv_(params, self.v, denom, value=-lr / (1 - ADAM_BETA1 ** self.t))
        elif self.kind == "rmsprop":
            torch._foreach_mul_(self.s, RMSPROP_RHO)
            torch._foreach_addcmul_(self.s, grads, grads, value=1 - RMSPROP_RHO)
            denom = torch._foreach_add(torch._foreach_sqrt(self.s), EPSILON)
            torch._foreach_addcdiv_(params, grads, denom, value=-lr)
