"""PyTorch adapter: an nn.Sequential built from the ModelSpec, data on the device.

Native: torch.optim's SGD (momentum and Nesterov with the rate outside the buffer: b = mu*b + g;
w -= lr*b), Adam and RMSprop (alpha 0.99) with their defaults, weight_decay added to the gradient, and a
torch.optim.lr_scheduler stepped after every optimizer step (LambdaLR for Caffe's inv). Otherwise the
hand-written `optim.rule_update` runs on the parameters (canonical: the rate inside the velocity).
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sensitivity.core import semantics
from sensitivity.core.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks import gpu
from sensitivity.frameworks.backends.torch import deterministic_flags, gpu_peak_mb, gpu_placement, gpu_setup
from sensitivity.frameworks.backends.torch import numerics as torch_numerics
from sensitivity.frameworks.base import EpochStats, LossReader


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
        if gpu.deterministic():
            deterministic_flags()
        self.device = torch.device("cpu") if device == "cpu" else gpu_setup("torch", device)
        self.check_every = 1 if self.device.type == "cpu" else 25  # a finite-loss check syncs the device

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
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
        resolved = semantics.resolve(spec)
        if resolved.stock:
            self.optimizer = _stock_optimizer(self.params, spec)
            self.scheduler = _scheduler(self.optimizer, spec, total_steps)
        else:
            self.optimizer = RuleOptimizer(self.params, resolved.rule, spec)

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        probe = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=spec.lr)
        scheduler, rates = _scheduler(probe, spec, total_steps), []
        for _ in range(total_steps):
            rates.append(probe.param_groups[0]["lr"])
            probe.step()
            if scheduler is not None:
                scheduler.step()
        return np.asarray(rates)

    def threads_in_effect(self):
        """torch's intra-op thread count, read back."""
        return torch.get_num_threads()

    def numerics(self) -> dict:
        return {"dtype": str(torch.get_default_dtype()).removeprefix("torch."), "loss_reduction": "mean",
                **torch_numerics()}

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
        """Eager: nothing to compile on a CPU. On a GPU, one forward and backward pass now starts CUDA's and
        cuDNN's kernels and handles outside the timed epochs; its gradients and random draws are discarded."""
        if self.device.type == "cpu":
            return
        with torch.random.fork_rng(devices=[self.device]):
            self.model.train()
            F.cross_entropy(self.model(self.x[:batch_size]), self.y[:batch_size]).backward()
        self.model.zero_grad(set_to_none=True)
        torch.cuda.synchronize(self.device)

    def placement(self) -> dict:
        return gpu_placement("torch", self.device, {"model": next(self.model.parameters()).device,
                                                    "data": self.x.device})

    def peak_device_memory_mb(self):
        return gpu_peak_mb(self.device)

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        self.model.train()
        steps, batch = order.shape
        perm = torch.from_numpy(order.reshape(-1)).to(self.device)
        xs, ys = self.x[perm], self.y[perm]  # one gather per epoch, then contiguous slices
        losses = LossReader(self.check_every, lambda pending: torch.stack(pending).double().cpu().numpy())
        stock = not isinstance(self.optimizer, RuleOptimizer)
        for i in range(steps):
            loss = F.cross_entropy(self.model(xs[i * batch:(i + 1) * batch]), ys[i * batch:(i + 1) * batch])
            for p in self.params:
                p.grad = None
            loss.backward()
            diverged = losses.add(loss.detach(), i, steps)
            if diverged:
                return diverged
            if stock:
                self.optimizer.step()
                if self.scheduler is not None:
                    self.scheduler.step()
            else:
                self.optimizer.step(float(lrs[i]))
        return losses.stats(steps)

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


def _stock_optimizer(params: list, spec):
    """torch.optim's class for the optimizer, with its own defaults beside the trial's hyper-parameters."""
    wd = spec.weight_decay
    if spec.optimizer == "adam":
        return torch.optim.Adam(params, lr=spec.lr, weight_decay=wd)
    if spec.optimizer == "rmsprop":
        return torch.optim.RMSprop(params, lr=spec.lr, weight_decay=wd)
    momentum = 0.0 if spec.optimizer == "sgd" else spec.momentum
    return torch.optim.SGD(params, lr=spec.lr, momentum=momentum, nesterov=spec.optimizer == "nesterov",
                           weight_decay=wd)


def _scheduler(optimizer, spec, total_steps: int):
    """The torch.optim.lr_scheduler giving Caffe's policy per step (None for fixed): iteration `it` runs
    at the rate the scheduler holds after `it` calls of .step()."""
    sched = torch.optim.lr_scheduler
    if spec.lr_policy == "step":
        return sched.StepLR(optimizer, step_size=spec.stepsize, gamma=spec.gamma)
    if spec.lr_policy == "multistep":
        return sched.MultiStepLR(optimizer, milestones=list(spec.stepvalues), gamma=spec.gamma)
    if spec.lr_policy == "exp":
        return sched.ExponentialLR(optimizer, gamma=spec.gamma)
    if spec.lr_policy == "inv":  # no such scheduler: the general mechanism
        gamma, power = spec.gamma, spec.power
        return sched.LambdaLR(optimizer, lambda it: (1.0 + gamma * it) ** -power)
    if spec.lr_policy == "cosine":
        return sched.CosineAnnealingLR(optimizer, T_max=total_steps, eta_min=0.0)
    return None


class RuleOptimizer:
    """The hand-written update (optim.rule_update) of a semantics.Rule on torch tensors, without autograd."""

    def __init__(self, params: list, rule, spec):
        self.params, self.rule, self.spec, self.t = params, rule, spec, 0
        self.slots = [{name: torch.zeros_like(p) for name in slot_names(spec.optimizer)} for p in params]

    @torch.no_grad()
    def step(self, lr: float) -> None:
        self.t += 1
        spec = self.spec
        for p, slots in zip(self.params, self.slots):
            new, state = rule_update(self.rule, spec.optimizer, p, p.grad, slots, lr, spec.momentum,
                                     spec.weight_decay, self.t, torch.sqrt)
            p.copy_(new)
            slots.update(state)
