"""Chainer adapter: a chainer.Sequential of links and functions (NCHW), numpy arrays on the CPU, cupy on a GPU.

Chainer computes with numpy on the CPU: its convolutions are im2col plus BLAS matrix products, so the
thread count that matters is that of the BLAS numpy loaded (OpenBLAS in numpy's wheel), which is set
through its C call since numpy is imported before `setup`; numpy's own elementwise work is one thread.

Pooling: max pooling with cover_all=True is Caffe's ceil rounding (windows padded with -inf). Chainer's
average pooling has no ceil mode and divides by ksize^2, so a ceil-mode average pads the bottom and right
with zeros and rescales each window by ksize^2 over its in-image count, which is Caffe's average.

Optimizers (weight decay is Chainer's WeightDecay hook, lambda*w added to the gradient: canonical): SGD,
MomentumSGD (v = mu*v - lr*g; w += v) and RMSprop (epsilon outside the square root) are Chainer's own and
canonical; Chainer's NesterovAG adds mu^2 times the new velocity (canonical: the previous one), so a
canonical rule is written here; Chainer's Adam scales alpha by sqrt(1-beta2^t)/(1-beta1^t) but leaves
epsilon uncorrected, so its eps is set each step to 1e-8*sqrt(1-beta2^t), which makes it canonical.
"""
from __future__ import annotations

import ctypes
import functools
import math

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np
from chainer.optimizer import GradientMethod, HyperparameterProxy, UpdateRule
from chainer.utils.conv import get_conv_outsize

from sensitivity.frameworks.base import EpochStats
from sensitivity.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, pooled_size
from sensitivity.optim import ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO

_TO_CPU = chainer.backend.CpuDevice()


class ChainerAdapter:
    name = "chainer"

    def version(self) -> str:
        return chainer.__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        self.blas_threads = set_blas_threads(threads)
        np.random.seed(seed)  # Chainer's initialisers and its CPU dropout draw from numpy's global generator
        self.device = chainer.get_device("@numpy" if device == "cpu" else "@cupy:" + (device[4:] or "0"))
        if self.device.xp is not np:
            self.device.use()
            self.device.xp.random.seed(seed)
        self.check_every = 1 if device == "cpu" else 25  # reading the loss waits for the device

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec) -> None:
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
        self.optimizer = _optimizer(spec.optimizer, spec.lr, spec.momentum)
        self.optimizer.setup(self.model)
        if spec.weight_decay:
            self.optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(spec.weight_decay))

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = self.device.send(np.ascontiguousarray(x_train, np.float32))
        self.y = self.device.send(y_train.astype(np.int32))  # softmax_cross_entropy takes int32 labels

    def compile(self, batch_size: int) -> None:
        pass  # define-by-run: nothing to compile

    def _set_lr(self, lr: float) -> None:
        if self.optimizer.__class__ is chainer.optimizers.Adam:
            self.optimizer.alpha = lr
            self.optimizer.eps = EPSILON * math.sqrt(1 - ADAM_BETA2 ** (self.optimizer.t + 1))
        else:
            self.optimizer.lr = lr

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        steps, batch = order.shape
        perm = self.device.send(order.reshape(-1))
        xs, ys = self.x[perm], self.y[perm]  # one gather per epoch, then contiguous slices
        total, pending = 0.0, []
        with chainer.using_config("train", True), chainer.using_config("type_check", False):
            for i in range(steps):
                loss = F.softmax_cross_entropy(self.model(xs[i * batch:(i + 1) * batch]),
                                               ys[i * batch:(i + 1) * batch])
                self.model.cleargrads()
                loss.backward()
                pending.append(loss.array)
                if (i + 1) % self.check_every == 0 or i == steps - 1:
                    values = _TO_CPU.send(self.device.xp.stack(pending))
                    bad = np.flatnonzero(~np.isfinite(values))
                    if bad.size:  # the first non-finite loss among those not yet read
                        return EpochStats(float("nan"), i + 2 - len(values) + int(bad[0]), diverged=True)
                    total += float(values.sum(dtype=np.float64))
                    pending = []
                self._set_lr(float(lrs[i]))
                self.optimizer.update()
        return EpochStats(total / max(steps, 1), steps)

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


def set_blas_threads(threads: int) -> list:
    """Set the thread count of every OpenBLAS or MKL this process has loaded (numpy's among them), found
    in /proc/self/maps; returns the libraries set (none where that file does not exist)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line or "libmkl_rt" in line}
    except OSError:
        return []
    done = []
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for symbol in ("openblas_set_num_threads64_", "openblas_set_num_threads", "MKL_Set_Num_Threads"):
            if hasattr(lib, symbol):
                getattr(lib, symbol)(ctypes.c_int(threads))
                done.append(path)
                break
    return done


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
        extent, counts = [], []
        for size in chw[1:]:
            out = pooled_size(size, layer.kernel, layer.stride, layer.ceil)
            starts = np.arange(out) * layer.stride
            extent.append(max((out - 1) * layer.stride + layer.kernel - size, 0))
            counts.append(np.minimum(starts + layer.kernel, size) - starts)
        self.pad = ((0, 0), (0, 0), (0, extent[0]), (0, extent[1]))
        scale = (layer.kernel ** 2 / np.outer(*counts)).astype(np.float32)
        self.scale = None if np.all(scale == 1) else scale

    def __call__(self, x):
        if any(self.pad[2] + self.pad[3]):
            x = F.pad(x, self.pad, "constant")
        y = F.average_pooling_2d(x, self.kernel, self.stride)
        return y if self.scale is None else y * self.scale


def _optimizer(kind: str, lr: float, momentum: float):
    if kind == "sgd":
        return chainer.optimizers.SGD(lr)
    if kind == "momentum":
        return chainer.optimizers.MomentumSGD(lr, momentum)
    if kind == "nesterov":
        return CanonicalNesterov(lr, momentum)
    if kind == "adam":
        return chainer.optimizers.Adam(alpha=lr, beta1=ADAM_BETA1, beta2=ADAM_BETA2, eps=EPSILON)
    if kind == "rmsprop":
        return chainer.optimizers.RMSprop(lr, alpha=RMSPROP_RHO, eps=EPSILON)
    raise ValueError(f"unknown optimizer {kind!r}")


class CanonicalNesterovRule(UpdateRule):
    """v = mu*v - lr*g; w += mu*v - lr*g (numpy and cupy alike)."""

    def init_state(self, param):
        with chainer.using_device(param.device):
            self.state["v"] = param.device.xp.zeros_like(param.array)

    def update_core_cpu(self, param):
        grad = param.grad
        if grad is None:
            return
        v, lr, mu = self.state["v"], self.hyperparam.lr, self.hyperparam.momentum
        v *= mu
        v -= lr * grad
        param.array += mu * v - lr * grad

    update_core_gpu = update_core_cpu


class CanonicalNesterov(GradientMethod):
    lr = HyperparameterProxy("lr")
    momentum = HyperparameterProxy("momentum")

    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.hyperparam.lr, self.hyperparam.momentum = lr, momentum

    def create_update_rule(self):
        return CanonicalNesterovRule(self.hyperparam)
