"""Chainer adapter: a chainer.Sequential of links and functions (NCHW), numpy arrays on the CPU, cupy on a GPU.

Native: chainer.optimizers' SGD, MomentumSGD (v = mu*v - lr*g; w += v), NesterovAG (w += mu^2*v - (1+mu)*lr*g),
Adam (alpha = lr; epsilon 1e-8 added to the uncorrected root) or RMSprop (alpha 0.99, epsilon 1e-8 outside
the root) at their defaults, the WeightDecay hook (lambda*w added to the gradient), and the rate set after
every update by Chainer's shift extensions (StepShift, MultistepShift, ExponentialShift, InverseShift; a
CosineShift of this module's for cosine: chainer 7 has none) on 'alpha' for Adam, 'lr' otherwise, called
without a Trainer (the optimizer given to each). LeCunNormal kernels and zero biases, Chainer's link
defaults, when no weights are given. Otherwise (canonical, ablation points): `RuleOptimizer`, a
GradientMethod whose update rule runs the hand-written `optim.rule_update` at the rates `train_epoch` is given.

Chainer computes with numpy on the CPU: its convolutions are im2col plus BLAS matrix products, so the
thread count that matters is that of the BLAS numpy loaded (OpenBLAS in numpy's wheel), which is set
through its C call since numpy is imported before `setup`; numpy's own elementwise work is one thread.

Pooling: max pooling with cover_all=True is Caffe's ceil rounding (windows padded with -inf). Chainer's
average pooling has no ceil mode and divides by ksize^2, so a ceil-mode average pads the bottom and right
with zeros and rescales each window by ksize^2 over its in-image count, which is Caffe's average.
"""
from __future__ import annotations

import functools
import math

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
from chainer.optimizer import GradientMethod, HyperparameterProxy, UpdateRule
from chainer.training import extensions
from chainer.utils.conv import get_conv_outsize

from sensitivity.core import semantics
from sensitivity.core.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, ceil_padding, pooled_size, \
    window_counts
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks import gpu
from sensitivity.frameworks import threads as threads_of
from sensitivity.frameworks.base import EpochStats, LossReader

_TO_CPU = chainer.backend.CpuDevice()


class ChainerAdapter:
    name = "chainer"

    def version(self) -> str:
        return chainer.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        threads_of.blas(threads)  # threads_in_effect reads back what it took
        np.random.seed(seed)  # Chainer's initialisers and its CPU dropout draw from numpy's global generator
        chainer.config.cudnn_deterministic = gpu.deterministic()
        if device != "cpu":
            cuda = chainer.backends.cuda
            gpu.require("chainer", cuda.cupy.cuda.runtime.getDeviceCount() if cuda.available else 0,
                        gpu.index(device), "" if cuda.available else "CuPy is not installed: "
                        + gpu.NO_GPU_ROUTE["chainer"])
        self.device = chainer.get_device("@numpy" if device == "cpu" else "@cupy:" + (device[4:] or "0"))
        if self.device.xp is not np:
            self.device.use()
            self.device.xp.random.seed(seed)
        self.check_every = 1 if device == "cpu" else 25  # reading the loss waits for the device

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        layers, in_channels, in_features, shape = [], input_shape[0], None, tuple(input_shape)
        for layer, out in zip(model.layers, model.shapes(input_shape)):
            if isinstance(layer, Conv):  # weights LeCun normal, biases zero: Chainer's defaults
                layers.append(L.Convolution2D(in_channels, layer.out_channels, layer.kernel, layer.stride, layer.pad))
            elif isinstance(layer, Pool):
                layers.append(_max_pool(layer, shape) if layer.kind == "max" else CaffeAveragePool(layer, shape))
            elif isinstance(layer, Dense):
                layers.append(L.Linear(in_features, layer.units))
            elif isinstance(layer, ReLU):
                layers.append(F.relu)
            elif isinstance(layer, Flatten):  # (C, H, W) order, the neutral one
                layers.append(lambda x: F.reshape(x, (x.shape[0], -1)))
            elif isinstance(layer, Dropout):
                layers.append(functools.partial(F.dropout, ratio=layer.rate))
            in_channels, in_features, shape = out[0], out[0], out
        self.weighted = [link for link in layers if isinstance(link, (L.Convolution2D, L.Linear))]
        if weights is not None:
            for link, (kernel, bias) in zip(self.weighted, weights):
                link.W.array[...] = kernel.T if isinstance(link, L.Linear) else kernel
                link.b.array[...] = bias
        for layer in layers:
            if isinstance(layer, CaffeAveragePool):
                layer.scale = None if layer.scale is None else self.device.send(layer.scale)
        self.model = chainer.Sequential(*layers)
        self.model.to_device(self.device)
        resolved = semantics.resolve(spec)
        if resolved.stock:
            self.optimizer = _stock_optimizer(spec)
            self.optimizer.setup(self.model)
            if spec.weight_decay:
                self.optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(spec.weight_decay))
            self.schedule = _schedule(self.optimizer, spec, total_steps)
        else:
            self.optimizer = RuleOptimizer(resolved.rule, spec)
            self.optimizer.setup(self.model)
            self.schedule = None
        self.stock = resolved.stock

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """The rates Chainer's extension sets, read before each update (it is called after every update)."""
        probe = _stock_optimizer(spec)
        schedule, attr, rates = _schedule(probe, spec, total_steps), _rate_attribute(probe), []
        for _ in range(total_steps):
            rates.append(float(getattr(probe, attr)))
            if schedule is not None:
                schedule(None)
        return np.asarray(rates, np.float64)

    def numerics(self) -> dict:
        config = chainer.config
        return {"dtype": np.dtype(config.dtype).name, "loss_reduction": "mean", "use_cudnn": config.use_cudnn,
                "cudnn_deterministic": config.cudnn_deterministic, "autotune": config.autotune,
                "cudnn_fast_batch_normalization": config.cudnn_fast_batch_normalization,
                "use_ideep": config.use_ideep, "use_static_graph": config.use_static_graph}

    def threads_in_effect(self):
        """The BLAS's thread count, read back (numpy's elementwise work is one thread)."""
        return threads_of.blas()

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = self.device.send(np.ascontiguousarray(x_train, np.float32))
        self.y = self.device.send(y_train.astype(np.int32))  # softmax_cross_entropy takes int32 labels

    def placement(self) -> dict:
        where = {"model": next(self.model.params()).device, "data": chainer.get_device(self.x)}
        gpu.check_placed("chainer", {k: str(v).replace("@cupy", "cuda") for k, v in where.items()})
        cupy = chainer.backends.cuda.cupy
        return {"device_name": cupy.cuda.runtime.getDeviceProperties(self.device.device.id)["name"].decode(),
                "cuda": cupy.cuda.runtime.runtimeGetVersion(), "cudnn": chainer.backends.cuda.cudnn_enabled,
                "placed": {k: str(v) for k, v in where.items()}}

    def peak_device_memory_mb(self):
        return None  # CuPy's memory pool reports what it holds, not a peak

    def compile(self, batch_size: int) -> None:
        pass  # define-by-run: nothing to compile

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        steps, batch = order.shape
        perm = self.device.send(order.reshape(-1))
        xs, ys = self.x[perm], self.y[perm]  # one gather per epoch, then contiguous slices
        losses = LossReader(self.check_every, lambda pending: _TO_CPU.send(self.device.xp.stack(pending)))
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for i in range(steps):
                loss = F.softmax_cross_entropy(self.model(xs[i * batch:(i + 1) * batch]),
                                               ys[i * batch:(i + 1) * batch])
                self.model.cleargrads()
                loss.backward()
                diverged = losses.add(loss.array, i, steps)
                if diverged:
                    return diverged
                if not self.stock:
                    self.optimizer.lr = float(lrs[i])
                self.optimizer.update()
                if self.schedule is not None:
                    self.schedule(None)  # as a Trainer calls it after each update; the optimizer is its own
        return losses.stats(steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        with chainer.using_config("train", False), chainer.using_config("enable_backprop", False):
            return _TO_CPU.send(self.model(self.device.send(np.ascontiguousarray(x, np.float32))).array)

    def parameter_count(self) -> int:
        return sum(p.size for p in self.model.params())

    def get_weights(self) -> list:
        out = []
        for link in self.weighted:
            kernel = _TO_CPU.send(link.W.array).copy()
            out.append((kernel.T.copy() if isinstance(link, L.Linear) else kernel, _TO_CPU.send(link.b.array).copy()))
        return out

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        with chainer.using_config("train", False):
            xv = chainer.Variable(self.device.send(np.ascontiguousarray(x, np.float32)))
            loss = F.sum(F.softmax_cross_entropy(self.model(xv), self.device.send(y.astype(np.int32)), reduce="no"))
            (grad,) = chainer.grad([loss], [xv])
        return _TO_CPU.send(grad.array)


def _max_pool(layer: Pool, chw: tuple):
    """Max pooling; cover_all=True is Caffe's ceil, cropped where Caffe drops a window past the image."""
    sizes = [pooled_size(n, layer.kernel, layer.stride, layer.ceil) for n in chw[1:]]
    pool = functools.partial(F.max_pooling_2d, ksize=layer.kernel, stride=layer.stride, cover_all=layer.ceil)
    if sizes == [get_conv_outsize(n, layer.kernel, layer.stride, 0, layer.ceil) for n in chw[1:]]:
        return pool
    return lambda x: pool(x)[:, :, :sizes[0], :sizes[1]]


class CaffeAveragePool:
    """Average pooling with Caffe's rounding: zeros padded at the bottom and right up to the ceil size,
    each window's mean rescaled by ksize^2 over its in-image count (the mean over the image part)."""

    def __init__(self, layer: Pool, chw: tuple):
        self.kernel, self.stride = layer.kernel, layer.stride
        extent = [ceil_padding(layer, size) for size in chw[1:]]
        counts = [window_counts(layer, size) for size in chw[1:]]
        self.pad = ((0, 0), (0, 0), (0, extent[0]), (0, extent[1]))
        scale = (layer.kernel ** 2 / np.outer(*counts)).astype(np.float32)
        self.scale = None if np.all(scale == 1) else scale

    def __call__(self, x):
        if any(self.pad[2] + self.pad[3]):
            x = F.pad(x, self.pad, "constant")
        y = F.average_pooling_2d(x, self.kernel, self.stride)
        return y if self.scale is None else y * self.scale


def _stock_optimizer(spec):
    """chainer.optimizers' class for the optimizer, with its own defaults beside the trial's hyper-parameters."""
    kind, lr = spec.optimizer, spec.lr
    if kind == "sgd":
        return chainer.optimizers.SGD(lr)
    if kind == "momentum":
        return chainer.optimizers.MomentumSGD(lr, spec.momentum)
    if kind == "nesterov":
        return chainer.optimizers.NesterovAG(lr, spec.momentum)
    if kind == "adam":
        return chainer.optimizers.Adam(alpha=lr)  # beta1 0.9, beta2 0.999, eps 1e-8
    if kind == "rmsprop":
        return chainer.optimizers.RMSprop(lr)  # alpha 0.99, eps 1e-8
    raise ValueError(f"unknown optimizer {kind!r}")


def _rate_attribute(optimizer) -> str:
    return "alpha" if isinstance(optimizer, chainer.optimizers.Adam) else "lr"


def _schedule(optimizer, spec, total_steps: int):
    """Chainer's extension for the policy (None for fixed), initialised: after t calls it has set Caffe's
    rate of iteration t (a Trainer calls it after every update)."""
    attr, lr, policy = _rate_attribute(optimizer), spec.lr, spec.lr_policy
    if policy == "step":
        shift = extensions.StepShift(attr, spec.gamma, spec.stepsize, init=lr, optimizer=optimizer)
    elif policy == "multistep":
        shift = extensions.MultistepShift(attr, spec.gamma, list(spec.stepvalues), lr, optimizer=optimizer)
    elif policy == "exp":
        shift = extensions.ExponentialShift(attr, spec.gamma, init=lr, optimizer=optimizer)
    elif policy == "inv":
        shift = extensions.InverseShift(attr, spec.gamma, spec.power, init=lr, optimizer=optimizer)
    elif policy == "cosine":
        shift = CosineShift(attr, total_steps, init=lr, optimizer=optimizer)
    else:
        return None
    shift.initialize(None)
    return shift


class CosineShift(chainer.training.Extension):
    """Cosine annealing of an optimizer attribute, in the form of Chainer's shift extensions (chainer 7 has
    none): after t calls the attribute is init*(1+cos(pi*t/total_steps))/2."""

    trigger = (1, "iteration")

    def __init__(self, attr: str, total_steps: int, init=None, optimizer=None):
        self._attr, self._total, self._init, self._optimizer, self._t = attr, max(total_steps, 1), init, optimizer, 0

    def initialize(self, trainer):
        optimizer = self._get_optimizer(trainer)
        if self._init is None:
            self._init = getattr(optimizer, self._attr)
        self._update_value(optimizer)

    def __call__(self, trainer):
        self._t += 1
        self._update_value(self._get_optimizer(trainer))

    def serialize(self, serializer):
        self._t = serializer("_t", self._t)

    def _get_optimizer(self, trainer):
        return self._optimizer or trainer.updater.get_optimizer("main")

    def _update_value(self, optimizer):
        setattr(optimizer, self._attr, self._init * 0.5 * (1.0 + math.cos(math.pi * self._t / self._total)))


class RuleUpdate(UpdateRule):
    """optim.rule_update of a semantics.Rule on one parameter (numpy and cupy alike); the rule's own
    weight decay, so no WeightDecay hook."""

    def __init__(self, parent_hyperparam, rule, spec):
        super().__init__(parent_hyperparam)
        self.rule, self.spec = rule, spec

    def init_state(self, param):
        with chainer.using_device(param.device):
            for name in slot_names(self.spec.optimizer):
                self.state[name] = param.device.xp.zeros_like(param.array)

    def update_core_cpu(self, param):
        if param.grad is None:
            return
        spec = self.spec
        xp = chainer.backend.get_array_module(param.array)
        new, state = rule_update(self.rule, spec.optimizer, param.array, param.grad, self.state, self.hyperparam.lr,
                                 spec.momentum, spec.weight_decay, self.t, xp.sqrt)
        param.array[...] = new
        self.state.update(state)

    update_core_gpu = update_core_cpu


class RuleOptimizer(GradientMethod):
    """A GradientMethod running the hand-written update; its rate is set before every update."""

    lr = HyperparameterProxy("lr")

    def __init__(self, rule, spec):
        super().__init__()
        self.hyperparam.lr = spec.lr
        self.rule, self.spec = rule, spec

    def create_update_rule(self):
        return RuleUpdate(self.hyperparam, self.rule, self.spec)
