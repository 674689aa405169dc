"""MXNet adapter: a hybridized Gluon HybridSequential (NCHW), data resident as NDArrays, canonical updates.

Threads: libmxnet reads OMP_NUM_THREADS, MXNET_OMP_MAX_THREADS and MXNET_CPU_WORKER_NTHREADS once, when
it loads; MXNet's C call MXSetNumOMPThreads sets only the calling thread, while operators run on the
engine's worker thread (measured: no effect; without the variables MXNet used one OpenMP thread on this
2-core machine). So mxnet is imported in `setup`, after those variables are set from `threads`; a warm
worker keeps the first trial's thread count.

Pooling: ceil_mode=True is MXNet's 'full' convention, Caffe's rounding; with no padding its average
divides by the in-image part of each window, as Caffe does (the contract's cifar10_quick test checks it).
Where 'full' adds a last window that starts past the image (kernel < stride), a slice drops it as Caffe does.
Input gradients are recorded in training mode on a dropout-free copy of the network: MXNet 1.9.1's MKL-DNN
max pooling gives wrong input gradients after a forward recorded in inference mode.

Optimizers (all add weight_decay*w to the gradient, the canonical L2 term): sgd and momentum use MXNet's
fused preloaded_multi_sgd(_mom)_update (v = mu*v - lr*(g + wd*w); w += v: canonical); adam uses adam_update with its
rate and epsilon rescaled each step so that epsilon sits outside the bias-corrected square root (MXNet's
own Adam scales the rate only, leaving epsilon uncorrected); nesterov (MXNet's NAG keeps lr outside the
velocity) and rmsprop (MXNet puts epsilon inside the square root) are written with NDArray ops.
"""
from __future__ import annotations

import importlib.util
import math
import os

import numpy as np

from sensitivity.frameworks.base import EpochStats
from sensitivity.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU
from sensitivity.optim import ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO

if importlib.util.find_spec("mxnet") is None:  # keep the registry's "install the extra" message
    raise ImportError("No module named 'mxnet'")

mx = None  # imported by _import_mxnet, once the thread count is known


def _import_mxnet(threads: int = 0):
    global mx
    if mx is None:
        if threads:
            os.environ["OMP_NUM_THREADS"] = os.environ["MXNET_OMP_MAX_THREADS"] = str(threads)
        os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")  # one op at a time, all cores to OpenMP
        import mxnet
        mx = mxnet
    return mx


class MxnetAdapter:
    name = "mxnet"

    def version(self) -> str:
        return _import_mxnet().__version__

    def setup(self, threads: int, device: str, seed: int) -> None:
        _import_mxnet(threads)
        mx.random.seed(seed)
        self.ctx = mx.cpu() if device == "cpu" else mx.gpu(int(device[4:] or 0))
        self.check_every = 1 if device == "cpu" else 25  # reading the loss waits for the device

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec) -> None:
        nn = mx.gluon.nn
        self.net = nn.HybridSequential()
        in_channels, in_features, shape = input_shape[0], None, tuple(input_shape)
        for layer, out in zip(model.layers, model.shapes(input_shape)):
            if isinstance(layer, Conv):
                self.net.add(nn.Conv2D(layer.out_channels, layer.kernel, layer.stride, layer.pad,
                                       in_channels=in_channels))
            elif isinstance(layer, Pool):
                if layer.kind == "max":
                    self.net.add(nn.MaxPool2D(layer.kernel, layer.stride, 0, ceil_mode=layer.ceil))
                else:  # count_include_pad=True (the default) gives the mean of the real inputs in a window
                    # past the edge, but a backward pass that divides otherwise (MXNet 1.9.1, measured here)
                    self.net.add(nn.AvgPool2D(layer.kernel, layer.stride, 0, ceil_mode=layer.ceil,
                                              count_include_pad=False))
                if _mxnet_pool_size(layer, shape) != out[1:]:  # a last window past the image: Caffe drops it
                    end = (None, None) + out[1:]
                    self.net.add(nn.HybridLambda(lambda F, x, end=end: F.slice(x, (None,) * 4, end)))
            elif isinstance(layer, Dense):  # flattens its input in (C, H, W) order, the neutral one
                self.net.add(nn.Dense(layer.units, in_units=in_features))
            elif isinstance(layer, ReLU):
                self.net.add(nn.Activation("relu"))
            elif isinstance(layer, Flatten):
                self.net.add(nn.Flatten())
            elif isinstance(layer, Dropout):
                self.net.add(nn.Dropout(layer.rate))
            in_channels, in_features, shape = out[0], out[0], out
        self.net.initialize(mx.init.Xavier(), ctx=self.ctx)  # MXNet's usual initialiser, biases zero
        self.weighted = [b for b in self.net if isinstance(b, (nn.Conv2D, nn.Dense))]
        if weights is not None:
            for block, (kernel, bias) in zip(self.weighted, weights):
                kernel = kernel.T if isinstance(block, nn.Dense) else kernel
                block.weight.set_data(mx.nd.array(kernel, ctx=self.ctx))
                block.bias.set_data(mx.nd.array(bias, ctx=self.ctx))
        params = [p for b in self.weighted for p in (b.weight, b.bias)]
        self.optimizer = CanonicalOptimizer([p.data(self.ctx) for p in params], [p.grad(self.ctx) for p in params],
                                            spec.optimizer, spec.momentum, spec.weight_decay)
        # Training graph: network and mean cross-entropy in one cached op of fixed shapes. Evaluation graph:
        # the same blocks without dropout (another cached op, any batch size; see input_gradient).
        self.eval_net = nn.HybridSequential()
        self.eval_net.add(*[block for block in self.net if not isinstance(block, nn.Dropout)])
        data, label = mx.sym.var("data", dtype="float32"), mx.sym.var("label", dtype="float32")
        loss = -mx.sym.mean(mx.sym.pick(mx.sym.log_softmax(self.net(data)), label))
        self.train_loss = mx.gluon.SymbolBlock(loss, [data, label], params=self.net.collect_params())
        self.train_loss.hybridize(static_alloc=True, static_shape=True)
        self.eval_net.hybridize(static_alloc=True)

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = mx.nd.array(x_train, ctx=self.ctx)
        self.y = mx.nd.array(y_train, ctx=self.ctx, dtype="float32")

    def compile(self, batch_size: int) -> None:
        """Build both cached ops (forward and backward) on a zero batch; gradients are written, weights kept."""
        x = mx.nd.zeros((batch_size,) + self.x.shape[1:], ctx=self.ctx)
        with mx.autograd.record():
            loss = self.train_loss(x, mx.nd.zeros(batch_size, ctx=self.ctx))
        loss.backward()
        self.eval_net(x).wait_to_read()

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        steps, batch = order.shape
        perm = mx.nd.array(order.reshape(-1), ctx=self.ctx, dtype="int32")
        xs, ys = mx.nd.take(self.x, perm), mx.nd.take(self.y, perm)  # one gather, then contiguous slices
        total, pending = 0.0, []
        self.optimizer.begin_epoch(lrs)
        for i in range(steps):
            with mx.autograd.record():
                loss = self.train_loss(xs[i * batch:(i + 1) * batch], ys[i * batch:(i + 1) * batch])
            loss.backward()
            pending.append(loss)
            if (i + 1) % self.check_every == 0 or i == steps - 1:
                values = mx.nd.concat(*pending, dim=0).asnumpy() if len(pending) > 1 else pending[0].asnumpy()
                bad = np.flatnonzero(~np.isfinite(values))
                if bad.size:  # the first non-finite loss among those not yet read
                    return EpochStats(float("nan"), i + 2 - len(values) + int(bad[0]), diverged=True)
                total += float(values.sum(dtype=np.float64))
                pending = []
            self.optimizer.step(i)
        return EpochStats(total / max(steps, 1), steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.eval_net(mx.nd.array(x, ctx=self.ctx)).asnumpy()

    def parameter_count(self) -> int:
        return sum(p.data(self.ctx).size for p in self.net.collect_params().values())

    def get_weights(self) -> list:
        out = []
        for block in self.weighted:
            kernel = block.weight.data(self.ctx).asnumpy()
            out.append((kernel.T.copy() if isinstance(block, mx.gluon.nn.Dense) else kernel,
                        block.bias.data(self.ctx).asnumpy()))
        return out

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xt = mx.nd.array(x, ctx=self.ctx)
        xt.attach_grad()
        # Training mode, on the dropout-free network: after an inference-mode forward, MXNet 1.9.1's MKL-DNN
        # max pooling keeps no workspace and its backward is wrong (measured: off by the whole gradient).
        with mx.autograd.record(train_mode=True):
            logits = self.eval_net(xt)
            loss = -mx.nd.sum(mx.nd.pick(mx.nd.log_softmax(logits), mx.nd.array(y, ctx=self.ctx)))
        loss.backward()
        return xt.grad.asnumpy()


def _mxnet_pool_size(layer: Pool, chw: tuple) -> tuple:
    """MXNet's 'full' (ceil) convention lacks Caffe's rule that no window starts past the image."""
    rounding = math.ceil if layer.ceil else math.floor
    return tuple(int(rounding((size - layer.kernel) / layer.stride)) + 1 for size in chw[1:])


class CanonicalOptimizer:
    """The canonical update (sensitivity.optim) on the parameters' NDArrays, in place, after backward."""

    def __init__(self, weights: list, grads: list, optimizer: str, momentum: float, weight_decay: float):
        self.w, self.g, self.kind, self.mu, self.wd = weights, grads, optimizer, momentum, weight_decay
        zeros = lambda: [mx.nd.zeros_like(w) for w in weights]  # noqa: E731
        self.v = zeros() if optimizer in ("momentum", "nesterov", "adam") else None
        self.s = zeros() if optimizer in ("adam", "rmsprop") else None
        self.wds = mx.nd.full(len(weights), weight_decay, ctx=weights[0].context)
        self.t = 0

    def begin_epoch(self, lrs: np.ndarray) -> None:
        """Every step's rate as a device row per weight: the fused ops read rates from NDArrays, so no
        per-step op makes them (and their string parameters could not carry a rate of inf)."""
        self.rates = mx.nd.array(np.repeat(np.asarray(lrs)[:, None], len(self.w), axis=1), ctx=self.w[0].context)
        self.lrs = lrs

    def step(self, i: int) -> None:
        lr = float(self.lrs[i])
        if self.kind == "sgd":  # w -= lr*(g + wd*w)
            data = [a for pair in zip(self.w, self.g) for a in pair]
            mx.nd.preloaded_multi_sgd_update(*data, self.rates[i], self.wds, num_weights=len(self.w), out=self.w)
        elif self.kind == "momentum":  # v = mu*v - lr*(g + wd*w); w += v
            data = [a for triple in zip(self.w, self.g, self.v) for a in triple]
            mx.nd.preloaded_multi_sgd_mom_update(*data, self.rates[i], self.wds, momentum=self.mu,
                                                 num_weights=len(self.w), out=self.w)
        elif self.kind == "adam":  # lr*m_hat/(sqrt(s_hat)+eps) == lr'*m/(sqrt(s)+eps') with these lr', eps'
            self.t += 1
            root = math.sqrt(1 - ADAM_BETA2 ** self.t)
            rate, eps = lr * root / (1 - ADAM_BETA1 ** self.t), EPSILON * root
            for w, g, m, s in zip(self.w, self.g, self.v, self.s):
                mx.nd.adam_update(w, g, m, s, lr=rate, beta1=ADAM_BETA1, beta2=ADAM_BETA2, epsilon=eps,
                                  wd=self.wd, out=w)
        else:
            for k, (w, g) in enumerate(zip(self.w, self.g)):
                if self.wd:
                    g = g + self.wd * w
                if self.kind == "nesterov":  # v = mu*v - lr*g; w += mu*v - lr*g
                    step = g * lr
                    v = self.v[k]
                    v *= self.mu
                    v -= step
                    w += v * self.mu - step
                else:  # rmsprop: s = rho*s + (1-rho)*g^2; w -= lr*g/(sqrt(s)+eps)
                    s = self.s[k]
                    s *= RMSPROP_RHO
                    s += (1 - RMSPROP_RHO) * mx.nd.square(g)
                    w -= lr * g / (mx.nd.sqrt(s) + EPSILON)
