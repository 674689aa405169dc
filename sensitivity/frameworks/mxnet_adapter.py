"""MXNet adapter: a hybridized Gluon HybridSequential (NCHW), data resident as NDArrays.

Native: gluon.Trainer with mx.optimizer's SGD (momentum), NAG, Adam or RMSProp at their defaults (Adam
epsilon 1e-8 added to the uncorrected root; RMSProp gamma1 0.9, epsilon 1e-8 inside the root, not
centered), wd=weight_decay added to the rescaled gradient of every parameter (Gluon's wd_mult is 1, biases
included), as a Gluon user trains: gluon.loss.SoftmaxCrossEntropyLoss per sample, backward (the gradient
of the sum) and trainer.step(batch_size) (rescale_grad 1/batch). The rate comes from an mx.lr_scheduler
that the optimizer reads at num_update, 1 at the first update: see `_scheduler`. Block.initialize()'s
Uniform(0.07) when no weights are given.
Otherwise (canonical, ablation points): the hand-written `optim.rule_update` on the NDArrays at the rates
`train_epoch` is given, on the gradient of the mean loss; where the Rule is the one MXNet's fused
preloaded_multi_sgd(_mom)_update computes (sgd, momentum with the rate inside the velocity, L2 weight decay),
that op runs it, in one call for all weights (MXNet's per-op overhead is high).

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
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from sensitivity.core import semantics
from sensitivity.core.models import Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, pooled_size
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks import gpu
from sensitivity.frameworks import threads as threads_of
from sensitivity.frameworks.base import EpochStats, LossReader

if importlib.util.find_spec("mxnet") is None:  # keep the registry's "install the extra" message
    raise ImportError("No module named 'mxnet'")

mx = None  # imported by _import_mxnet, once the thread count is known


def _import_mxnet(threads: int = 0):
    global mx
    if mx is None:
        if threads:
            os.environ["OMP_NUM_THREADS"] = os.environ["MXNET_OMP_MAX_THREADS"] = str(threads)
        os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")  # one op at a time, all cores to OpenMP
        # lazy: mxnet
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
        if device != "cpu":
            cuda = mx.runtime.Features().is_enabled("CUDA")
            gpu.require("mxnet", mx.context.num_gpus() if cuda else 0, gpu.index(device),
                        "" if cuda else f"mxnet {mx.__version__} is built without CUDA")

    def placement(self) -> dict:
        where = {"model": next(iter(self.net.collect_params().values())).list_ctx()[0], "data": self.x.context}
        gpu.check_placed("mxnet", where)
        features = mx.runtime.Features()
        return {"device_name": None, "cuda": features.is_enabled("CUDA"), "cudnn": features.is_enabled("CUDNN"),
                "placed": {k: str(v) for k, v in where.items()}}

    def peak_device_memory_mb(self):
        return None  # MXNet's pooled allocator reports no peak

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        nn = mx.gluon.nn
        self.net = nn.HybridSequential()
        in_channels, in_features, shape = input_shape[0], None, tuple(input_shape)
        for layer, out in zip(model.layers, model.shapes(input_shape)):
            if isinstance(layer, Conv):
                self.net.add(nn.Conv2D(layer.out_channels, layer.kernel, layer.stride, layer.pad,
                                       in_channels=in_channels))
            elif isinstance(layer, Pool):
                self.net.add(*_pool(layer, shape))
            elif isinstance(layer, Dense):  # flattens its input in (C, H, W) order, the neutral one
                self.net.add(nn.Dense(layer.units, in_units=in_features))
            elif isinstance(layer, ReLU):
                self.net.add(nn.Activation("relu"))
            elif isinstance(layer, Flatten):
                self.net.add(nn.Flatten())
            elif isinstance(layer, Dropout):
                self.net.add(nn.Dropout(layer.rate))
            in_channels, in_features, shape = out[0], out[0], out
        self.net.initialize(ctx=self.ctx)  # Block.initialize()'s default: Uniform(0.07); biases 'zeros'
        self.weighted = [b for b in self.net if isinstance(b, (nn.Conv2D, nn.Dense))]
        if weights is not None:
            for block, (kernel, bias) in zip(self.weighted, weights):
                kernel = kernel.T if isinstance(block, nn.Dense) else kernel
                block.weight.set_data(mx.nd.array(kernel, ctx=self.ctx))
                block.bias.set_data(mx.nd.array(bias, ctx=self.ctx))
        params = [p for b in self.weighted for p in (b.weight, b.bias)]
        resolved = semantics.resolve(spec)
        self.stock = resolved.stock
        if self.stock:
            self.trainer = mx.gluon.Trainer(self.net.collect_params(), _stock_optimizer(spec, total_steps))
        else:
            self.optimizer = RuleOptimizer([p.data(self.ctx) for p in params], [p.grad(self.ctx) for p in params],
                                           resolved.rule, spec)
        # Training graph: network and cross-entropy in one cached op of fixed shapes (per sample for the
        # Trainer, which rescales by 1/batch; the mean for the hand-written update). Evaluation graph: the
        # same blocks without dropout (another cached op, any batch size; see input_gradient).
        self.eval_net = nn.HybridSequential()
        self.eval_net.add(*[block for block in self.net if not isinstance(block, nn.Dropout)])
        data, label = mx.sym.var("data", dtype="float32"), mx.sym.var("label", dtype="float32")
        loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()(self.net(data), label)
        loss = loss if self.stock else mx.sym.mean(loss)
        self.train_loss = mx.gluon.SymbolBlock(loss, [data, label], params=self.net.collect_params())
        self.train_loss.hybridize(static_alloc=True, static_shape=True)
        self.eval_net.hybridize(static_alloc=True)

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """The rates the optimizer reads from its scheduler: each update first counts itself (num_update
        1 at the first), then asks the scheduler (Optimizer._update_count, then .learning_rate)."""
        _import_mxnet()
        probe, rates = _stock_optimizer(spec, total_steps), []
        for _ in range(total_steps):
            probe._update_count(0)
            rates.append(probe.learning_rate)
        return np.asarray(rates, np.float64)

    def threads_in_effect(self):
        """The OpenMP team size libmxnet's operators get, read back from the OpenMP runtime: a warm
        worker keeps its first trial's (see the module's docstring)."""
        return threads_of.openmp()

    def numerics(self) -> dict:
        features = _import_mxnet().runtime.Features()
        stock = getattr(self, "stock", None)
        return {"dtype": "float32",
                "loss_reduction": None if stock is None else "sum; gradient rescaled by 1/batch_size "
                "(trainer.step(batch_size))" if stock else "mean",
                "mkldnn": features.is_enabled("MKLDNN"), "cuda": features.is_enabled("CUDA"),
                "cudnn": features.is_enabled("CUDNN"),
                "environment": {k: v for k, v in sorted(os.environ.items())
                                if k.startswith(("MXNET_", "DNNL_", "MKLDNN_")) or k == "OMP_NUM_THREADS"}}

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
        # each step's loss (per sample, or the mean as one value) read as the mean data loss
        losses = LossReader(self.check_every, lambda pending: mx.nd.stack(*pending).asnumpy().astype(
            np.float64).mean(axis=1))
        if not self.stock:
            self.optimizer.begin_epoch(lrs)
        for i in range(steps):
            with mx.autograd.record():
                loss = self.train_loss(xs[i * batch:(i + 1) * batch], ys[i * batch:(i + 1) * batch])
            loss.backward()
            diverged = losses.add(loss, i, steps)
            if diverged:
                return diverged
            if self.stock:
                self.trainer.step(batch)
            else:
                self.optimizer.step(i)
        return losses.stats(steps)

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


def _pool(layer: Pool, chw: tuple) -> list:
    """Gluon's pooling block with Caffe's rounding, and a slice where MXNet's 'full' convention keeps a
    last window that starts past the image (Caffe drops it); MXNet's own shape inference tells."""
    nn = mx.gluon.nn
    if layer.kind == "max":
        pool = nn.MaxPool2D(layer.kernel, layer.stride, 0, ceil_mode=layer.ceil)
    else:  # count_include_pad=True (the default) gives the mean of the real inputs in a window past the
        # edge, but a backward pass that divides otherwise (MXNet 1.9.1, measured here)
        pool = nn.AvgPool2D(layer.kernel, layer.stride, 0, ceil_mode=layer.ceil, count_include_pad=False)
    caffe = tuple(pooled_size(size, layer.kernel, layer.stride, layer.ceil) for size in chw[1:])
    framework = pool(mx.sym.var("x")).infer_shape(x=(1,) + tuple(chw))[1][0][2:]
    if framework == caffe:
        return [pool]
    end = (None, None) + caffe
    return [pool, nn.HybridLambda(lambda F, x: F.slice(x, (None,) * 4, end))]


def _stock_optimizer(spec, total_steps: int):
    """mx.optimizer's class for the optimizer with its own defaults beside the trial's hyper-parameters;
    wd is added to the rescaled gradient."""
    common = dict(learning_rate=spec.lr, wd=spec.weight_decay, lr_scheduler=_scheduler(spec, total_steps))
    if spec.optimizer == "adam":
        return mx.optimizer.Adam(**common)  # beta1 0.9, beta2 0.999, epsilon 1e-8
    if spec.optimizer == "rmsprop":
        return mx.optimizer.RMSProp(**common)  # gamma1 0.9, epsilon 1e-8, centered=False
    if spec.optimizer == "nesterov":
        return mx.optimizer.NAG(momentum=spec.momentum, **common)
    return mx.optimizer.SGD(momentum=spec.momentum if spec.optimizer == "momentum" else 0.0, **common)


def _scheduler(spec, total_steps: int):
    """The mx.lr_scheduler giving Caffe's policy (None for fixed). MXNet reads it at num_update, 1 at the
    first update, so iteration it (Caffe's, from 0) runs at scheduler(it + 1):
    - FactorScheduler reduces when num_update > count + step: floor((it+1-1)/step) reductions, Caffe's step
      (step=1: exp); its stop_factor_lr (a floor of 1e-8 by default) is set to 0, as Caffe has none;
    - MultiFactorScheduler reduces when num_update > a step value: the values <= it, Caffe's multistep;
    - CosineScheduler decays from num_update = warmup_steps over max_update - warmup_steps updates: with
      warmup_steps=1 (its warm-up rate, at num_update 0, never used for an update: set to base_lr) and
      max_update=total_steps+1 it gives lr*(1+cos(pi*it/total_steps))/2;
    - inv has no scheduler: an LRScheduler subclass."""
    schedulers, policy = mx.lr_scheduler, spec.lr_policy
    if policy in ("step", "exp", "multistep") and spec.gamma > 1:
        raise ValueError(f"mxnet: lr_policy {policy} with gamma {spec.gamma}: mx.lr_scheduler refuses a factor "
                         f"above 1; allowed: gamma <= 1, or knobs.schedule canonical")
    if policy == "step":
        return schedulers.FactorScheduler(step=spec.stepsize, factor=spec.gamma, stop_factor_lr=0.0, base_lr=spec.lr)
    if policy == "exp":
        return schedulers.FactorScheduler(step=1, factor=spec.gamma, stop_factor_lr=0.0, base_lr=spec.lr)
    if policy == "multistep":
        return schedulers.MultiFactorScheduler(step=list(spec.stepvalues), factor=spec.gamma, base_lr=spec.lr)
    if policy == "cosine":
        return schedulers.CosineScheduler(max_update=int(total_steps) + 1, base_lr=spec.lr, final_lr=0.0,
                                          warmup_steps=1, warmup_begin_lr=spec.lr)
    if policy == "inv":
        return _inv_scheduler(spec.lr, spec.gamma, spec.power)
    return None


def _inv_scheduler(base_lr: float, gamma: float, power: float):
    class InvScheduler(mx.lr_scheduler.LRScheduler):
        """Caffe's inv policy: base_lr*(1+gamma*it)^-power at iteration it = num_update - 1."""

        def __call__(self, num_update):
            return self.base_lr * (1.0 + gamma * max(num_update - 1, 0)) ** -power

    return InvScheduler(base_lr=base_lr)


class RuleOptimizer:
    """The hand-written update (optim.rule_update) of a semantics.Rule on the parameters' NDArrays, in
    place, after backward; MXNet's fused op where it computes that rule."""

    def __init__(self, weights: list, grads: list, rule, spec):
        self.w, self.g, self.rule, self.spec, self.t = weights, grads, rule, spec, 0
        self.slots = [{name: mx.nd.zeros_like(w) for name in slot_names(spec.optimizer)} for w in weights]
        # v = mu*v - lr*(g + wd*w); w += v (w -= lr*(g + wd*w) without momentum): rule_update's canonical rule
        self.fused = rule.weight_decay == "l2" and (spec.optimizer == "sgd" or
                                                     spec.optimizer == "momentum" and rule.momentum == "inside")
        self.wds = mx.nd.full(len(weights), spec.weight_decay, ctx=weights[0].context)

    def begin_epoch(self, lrs: np.ndarray) -> None:
        """The fused ops read every step's rate from a device row per weight: no per-step op makes them
        (and their string parameters could not carry a rate of inf)."""
        if self.fused:
            self.rates = mx.nd.array(np.repeat(np.asarray(lrs)[:, None], len(self.w), axis=1), ctx=self.w[0].context)
        self.lrs = lrs

    def step(self, i: int) -> None:
        spec, n = self.spec, len(self.w)
        if self.fused and spec.optimizer == "sgd":
            data = [a for pair in zip(self.w, self.g) for a in pair]
            mx.nd.preloaded_multi_sgd_update(*data, self.rates[i], self.wds, num_weights=n, out=self.w)
            return
        if self.fused:
            data = [a for w, g, slots in zip(self.w, self.g, self.slots) for a in (w, g, slots["v"])]
            mx.nd.preloaded_multi_sgd_mom_update(*data, self.rates[i], self.wds, momentum=spec.momentum,
                                                 num_weights=n, out=self.w)
            return
        self.t += 1
        lr = float(self.lrs[i])
        for w, g, slots in zip(self.w, self.g, self.slots):
            new, state = rule_update(self.rule, spec.optimizer, w, g, slots, lr, spec.momentum, spec.weight_decay,
                                     self.t, mx.nd.sqrt)
            new.copyto(w)
            slots.update(state)
