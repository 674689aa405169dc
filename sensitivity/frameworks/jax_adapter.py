"""JAX adapter: a Flax NNX model (NHWC), a jitted training step, data resident on the device.

Flax NNX is the API flax 0.12 documents as current (Linen is the legacy one). The model is used in NNX's
functional form: `nnx.split` once into a graph definition and a parameter State, `nnx.merge` inside the
jitted functions, so a step is a pure function of (carry, data, order, lrs, key, i). On GPU/TPU the epoch
is one `lax.scan` of that step (one dispatch); on CPU the step is dispatched per step, asynchronously,
because XLA:CPU runs convolution gradients inside a loop several times slower (see `build`;
docs/performance.md). Design notes:
- No `init` call: the neutral weights are written into an abstract model (`nnx.eval_shape`), so nothing
  is compiled op by op (as Linen's `model.init` outside jit would be). The framework's own
  initialiser (`init=framework`: lecun_normal kernels, zero biases) runs as one `nnx.jit`.
- Batches are always full (the loop drops the last partial batch), so the step never recompiles; the
  epoch is compiled ahead of time in `compile` for the epoch's shape (steps x batch).
- Native (stock): optax as its users write it: `optax.sgd(schedule, momentum, nesterov)` (the rate outside
  the trace: b = mu*b + g; w -= lr*b), `optax.adam(schedule)`, `optax.rmsprop(schedule)` (decay 0.9, eps
  1e-8 inside the square root), each after `optax.add_decayed_weights(wd)` when wd > 0 (L2 added to the
  gradient); the schedule is optax's (exponential_decay, piecewise_constant_schedule,
  cosine_decay_schedule; a plain function for Caffe's inv), read at optax's own step count. Its state lives
  in the jitted carry, so the `lrs` given to `train_epoch` are not used.
- Otherwise (canonical, or an ablation's knobs) `optim.rule_update` under the resolved Rule is mapped over
  the parameter tree, each step at the rate `lrs[i]`.
- Divergence: a flag in the carry; after the first non-finite loss the remaining steps are skipped by
  `lax.cond` in the scan, or on CPU not counted, and dispatching stops at the next check (one host sync
  per 16 steps); the epoch reports the steps taken, that one included.
- Dropout keys: `jax.random.PRNGKey(seed)`, folded in per epoch and per step.
Threads: XLA's CPU client sizes its thread pool from the CPUs the process may use, when jax first runs;
this jaxlib has no thread-count flag (`intra_op_parallelism_threads` is a TensorFlow session option, not
an XLA flag), and `XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`, read only if set before jax starts,
left the thread count (17) and the time of a 2000x2000 matmul unchanged here. So `threads` takes no
effect (the result records threads as null); limit a jax worker's cores from outside (taskset, or the
scheduler's CPU affinity).
"""
from __future__ import annotations

import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from sensitivity.core import semantics
from sensitivity.core.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, ceil_padding, from_nhwc,
                                     neutral_kernel, nhwc_kernel, to_nhwc)
from sensitivity.core.optim import rule_update, slot_names
from sensitivity.frameworks.backends.jax import gpu_peak_mb, gpu_placement, gpu_setup, use_compilation_cache
from sensitivity.frameworks.backends.jax import numerics as jax_numerics
from sensitivity.frameworks.base import EpochStats


def _flatten(x):
    return x.reshape(x.shape[0], -1)


def _network(model: ModelSpec, input_shape: tuple, rngs: nnx.Rngs) -> nnx.Sequential:
    """The ModelSpec as an nnx.Sequential (NHWC); pooling pads bottom/right to Caffe's ceil size."""
    layers, shape = [], tuple(input_shape)
    for layer, out in zip(model.layers, model.shapes(input_shape)):
        if isinstance(layer, Conv):
            layers.append(nnx.Conv(shape[0], layer.out_channels, (layer.kernel, layer.kernel), layer.stride,
                                   padding=[(layer.pad, layer.pad)] * 2, rngs=rngs))
        elif isinstance(layer, Pool):
            pads = tuple((0, ceil_padding(layer, n)) for n in shape[1:])
            window = dict(window_shape=(layer.kernel,) * 2, strides=(layer.stride,) * 2, padding=pads)
            layers.append(functools.partial(nnx.max_pool, **window) if layer.kind == "max" else
                          functools.partial(nnx.avg_pool, **window, count_include_pad=False))
        elif isinstance(layer, Dense):
            layers.append(nnx.Linear(shape[0], layer.units, rngs=rngs))
        elif isinstance(layer, ReLU):
            layers.append(nnx.relu)
        elif isinstance(layer, Flatten):
            layers.append(_flatten)
        elif isinstance(layer, Dropout):
            layers.append(nnx.Dropout(layer.rate))
        shape = out
    return nnx.Sequential(*layers)


class JaxAdapter:
    name = "jax"

    def version(self) -> str:
        # lazy: flax
        import flax
        return f"{jax.__version__} (flax {flax.__version__}, {jax.default_backend()})"

    def setup(self, threads: int, device: str, seed: int) -> None:
        use_compilation_cache()
        self.device = jax.devices("cpu")[0] if device == "cpu" else gpu_setup("jax", device)
        self.seed, self.key = seed, jax.random.PRNGKey(seed)
        self.epochs_done = 0

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec, total_steps: int) -> None:
        create = functools.partial(_network, model, input_shape)
        self.chw_before = self._flatten_inputs(model, input_shape)
        with jax.default_device(self.device):
            if weights is None:  # flax's own initialisers, compiled as one program
                net = nnx.jit(lambda: create(nnx.Rngs(self.seed)))()
            else:
                net = nnx.eval_shape(lambda: create(nnx.Rngs(0)))
                self._load(net, weights)
        net.train()
        self.graph_train, self.params = nnx.split(net)
        net.eval()
        self.graph_eval = nnx.graphdef(net)
        self.params = jax.device_put(self.params, self.device)
        resolved = semantics.resolve(spec)
        update = (_optax_update(_stock_optimizer(spec, total_steps)) if resolved.stock
                  else _rule_update(resolved.rule, spec))
        self.opt = update.init(self.params)
        self._step = _make_step(self.graph_train, update)
        # XLA:CPU (jaxlib 0.10.2) leaves the filter-gradient convolutions inside a while loop in a layout
        # Eigen cannot take (dim_labels f01b_i01o->01bf) and emits them as plain loops, far slower than the
        # same steps dispatched one by one (docs/performance.md). So on CPU
        # the jitted step is dispatched per step (asynchronously: the carry stays on the device, nothing
        # waits until the epoch ends); on accelerators the epoch is one scanned program.
        self.use_scan(self.device.platform != "cpu")
        self._forward = jax.jit(lambda params, x: nnx.merge(self.graph_eval, params)(x))

    def framework_rates(self, spec, total_steps: int) -> np.ndarray:
        """optax's schedule for the spec, evaluated (jitted, as in the step) at counts 0..total_steps-1."""
        schedule = _schedule(spec, total_steps)
        if not callable(schedule):
            return np.full(total_steps, schedule, np.float64)
        counts = jnp.arange(total_steps, dtype=jnp.int32)
        return np.asarray(jax.jit(jax.vmap(schedule))(counts), np.float64)

    def threads_in_effect(self):
        """None: jax has no thread-count setting (see the module's docstring)."""
        return None

    def numerics(self) -> dict:
        """The parameters' dtype (flax's param_dtype, float32), the loss's reduction and jax's precision flags."""
        platform = getattr(getattr(self, "device", None), "platform", jax.default_backend())
        leaves = jax.tree.leaves(getattr(self, "params", None))
        dtype = str(leaves[0].dtype) if leaves else "float32"
        return {"dtype": dtype, "loss_reduction": "mean", **jax_numerics(), "backend": jax.default_backend(),
                "platform": platform}

    def use_scan(self, scan: bool) -> None:
        """Run an epoch as one scanned program (True) or as one dispatch per step (False)."""
        self.per_step = not scan
        self._run = jax.jit(_scanned(self._step) if scan else self._step, donate_argnums=0)
        self._compiled = {}

    @staticmethod
    def _flatten_inputs(model: ModelSpec, input_shape: tuple) -> list:
        """For each Conv/Dense, the (C, H, W) a Dense reads straight after a Flatten of an image, or None."""
        out, shape, flat_from = [], tuple(input_shape), None
        for layer, next_shape in zip(model.layers, model.shapes(input_shape)):
            if isinstance(layer, Flatten):
                flat_from = shape if len(shape) == 3 else None
            elif isinstance(layer, (Conv, Dense)):
                out.append(flat_from if isinstance(layer, Dense) else None)
                flat_from = None
            shape = next_shape
        return out

    def _weighted(self, net) -> list:
        return [m for m in net.layers if isinstance(m, (nnx.Conv, nnx.Linear))]

    def _load(self, net, weights) -> None:
        """Neutral weights into the abstract model's variables (HWIO kernels, NHWC-ordered dense rows)."""
        for module, (kernel, bias), chw in zip(self._weighted(net), weights, self.chw_before):
            module.kernel.set_value(jax.device_put(nhwc_kernel(kernel, chw), self.device))
            module.bias.set_value(jax.device_put(bias, self.device))

    def placement(self) -> dict:
        where = {"model": jax.tree.leaves(self.params)[0].device, "data": self.x.device}
        return gpu_placement("jax", self.device, where)

    def peak_device_memory_mb(self):
        return gpu_peak_mb(self.device)

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = jax.device_put(to_nhwc(x_train), self.device)
        self.y = jax.device_put(y_train.astype(np.int32), self.device)

    def _carry(self):
        zero = lambda dtype: jax.device_put(np.zeros((), dtype), self.device)  # noqa: E731
        return (self.params, self.opt, zero(np.float32), zero(np.int32), jax.device_put(np.True_, self.device))

    def compile(self, batch_size: int) -> None:
        """Compile the step (CPU) or epoch ahead of time for (len(data) // batch_size) steps; no step is
        taken."""
        self.compile_epoch(len(self.y) // batch_size, batch_size)

    def compile_epoch(self, steps: int, batch_size: int) -> None:
        """Compile for an epoch of `steps` steps (a shorter last epoch is another program), outside timing."""
        args = (self._carry(), self.x, self.y, jax.ShapeDtypeStruct((steps, batch_size), jnp.int32),
                jax.ShapeDtypeStruct((steps,), jnp.float32), self.key)
        args += (jax.ShapeDtypeStruct((), jnp.int32),) if self.per_step else ()
        self._compiled[(steps, batch_size)] = self._run.lower(*args).compile()

    def train_epoch(self, order: np.ndarray, lrs: np.ndarray) -> EpochStats:
        key = jax.random.fold_in(self.key, self.epochs_done)
        self.epochs_done += 1
        run = self._compiled.get(order.shape, self._run)
        carry = self._carry()
        order = jax.device_put(order.astype(np.int32), self.device)
        lrs = jax.device_put(lrs.astype(np.float32), self.device)
        if self.per_step:
            for i in range(len(lrs)):
                if i % 16 == 15 and not bool(carry[-1]):  # a rare sync, to stop dispatching after divergence
                    break
                carry = run(carry, self.x, self.y, order, lrs, key, jax.device_put(np.int32(i), self.device))
        else:
            carry = run(carry, self.x, self.y, order, lrs, key)
        self.params, self.opt, total, steps, finite = carry
        steps = int(steps)
        if not bool(finite):
            return EpochStats(float("nan"), steps, diverged=True)
        return EpochStats(float(total) / max(steps, 1), steps)

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self._forward(self.params, jax.device_put(to_nhwc(x), self.device)))

    def parameter_count(self) -> int:
        params = nnx.state(nnx.merge(self.graph_eval, self.params), nnx.Param)
        return sum(leaf.size for leaf in jax.tree_util.tree_leaves(params))

    def get_weights(self) -> list:
        out = []
        for module, chw in zip(self._weighted(nnx.merge(self.graph_eval, self.params)), self.chw_before):
            out.append((neutral_kernel(np.asarray(module.kernel.get_value()), chw),
                        np.asarray(module.bias.get_value())))
        return out

    def input_gradient(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        def summed_loss(xv):
            logits = nnx.merge(self.graph_eval, self.params)(xv)
            return optax.softmax_cross_entropy_with_integer_labels(logits, jnp.asarray(y, jnp.int32)).sum()
        grad = np.asarray(jax.jit(jax.grad(summed_loss))(jax.device_put(to_nhwc(x), self.device)))
        return from_nhwc(grad)


def _schedule(spec, total_steps: int):
    """Caffe's lr policy as optax's schedule (a float for fixed); optax reads it at the update count, which
    is the iteration: piecewise_constant_schedule scales from `count >= boundary` on, as Caffe's multistep."""
    lr, gamma = spec.lr, spec.gamma
    if spec.lr_policy == "step":
        return optax.exponential_decay(lr, transition_steps=spec.stepsize, decay_rate=gamma, staircase=True)
    if spec.lr_policy == "multistep":
        return optax.piecewise_constant_schedule(lr, {b: gamma for b in spec.stepvalues})
    if spec.lr_policy == "exp":
        return optax.exponential_decay(lr, transition_steps=1, decay_rate=gamma)
    if spec.lr_policy == "cosine":
        return optax.cosine_decay_schedule(lr, decay_steps=max(total_steps, 1))
    if spec.lr_policy == "inv":  # optax has none: a schedule is any function of the count
        power = spec.power
        return lambda count: lr * (1.0 + gamma * count) ** -power
    return lr


def _stock_optimizer(spec, total_steps: int) -> optax.GradientTransformation:
    """optax's optimizer with its own defaults beside the trial's hyper-parameters; weight decay chained
    before it (optax.add_decayed_weights: wd*w added to the gradient)."""
    schedule = _schedule(spec, total_steps)
    if spec.optimizer == "adam":
        tx = optax.adam(schedule)
    elif spec.optimizer == "rmsprop":
        tx = optax.rmsprop(schedule)
    else:
        momentum = None if spec.optimizer == "sgd" else (spec.momentum or None)
        tx = optax.sgd(schedule, momentum=momentum, nesterov=spec.optimizer == "nesterov")
    return optax.chain(optax.add_decayed_weights(spec.weight_decay), tx) if spec.weight_decay > 0 else tx


class _Update(NamedTuple):
    """An update as the step uses it: init(params) -> state; apply(params, grads, state, lr) -> both new."""

    init: Callable
    apply: Callable


def _optax_update(tx: optax.GradientTransformation) -> _Update:
    def apply(params, grads, state, lr):  # the rate comes from optax's own schedule
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state
    return _Update(tx.init, apply)


def _init_slots(optimizer: str, params) -> dict:
    zeros = lambda: jax.tree.map(jnp.zeros_like, params)  # noqa: E731
    return {"t": jnp.zeros((), jnp.int32), **{name: zeros() for name in slot_names(optimizer)}}


def _rule_update(rule, spec) -> _Update:
    """optim.rule_update under `rule` on every leaf of the parameter tree, at the rate lrs[i]."""
    optimizer, mu, wd = spec.optimizer, spec.momentum, spec.weight_decay
    names = slot_names(optimizer)

    def apply(params, grads, state, lr):
        t = state["t"] + 1
        leaves, tree = jax.tree.flatten(params)
        slots = [jax.tree.leaves(state[name]) for name in names]
        new, new_slots = [], [[] for _ in names]
        for j, (w, g) in enumerate(zip(leaves, jax.tree.leaves(grads))):
            w, updated = rule_update(rule, optimizer, w, g, {n: s[j] for n, s in zip(names, slots)}, lr, mu, wd,
                                     t.astype(jnp.float32), jnp.sqrt)
            new.append(w)
            for k, name in enumerate(names):
                new_slots[k].append(updated[name])
        state = {"t": t, **{name: jax.tree.unflatten(tree, s) for name, s in zip(names, new_slots)}}
        return jax.tree.unflatten(tree, new), state

    return _Update(lambda params: _init_slots(optimizer, params), apply)


def _make_step(graph, update: _Update):
    """One step on the carry (params, opt, total, steps, finite): batch order[i] at rate lrs[i]. The step
    that sees the first non-finite loss counts (finite turns False) and later ones are not counted; the
    updates are not masked (selects over every weight cost a share of each epoch on CPU, and lax.cond makes
    XLA:CPU emit the convolutions as slow loops): by then the weights are not finite anyway, as in the
    other adapters, and dispatching stops at the next check (train_epoch) or the scan skips the rest."""
    def loss_fn(params, xb, yb, key):
        logits = nnx.merge(graph, params)(xb, rngs=nnx.Rngs(dropout=key))
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    grad_fn = jax.value_and_grad(loss_fn)

    def step(carry, x, y, order, lrs, key, i):
        params, opt, total, steps, finite = carry
        loss, grads = grad_fn(params, x[order[i]], y[order[i]], jax.random.fold_in(key, i))
        new_params, new_opt = update.apply(params, grads, opt, lrs[i])
        return (new_params, new_opt, jnp.where(finite, total + loss, total), steps + finite.astype(jnp.int32),
                finite & jnp.isfinite(loss))

    return step


def _scanned(step):
    """The whole epoch as one program: a lax.scan of `step` over i (used on accelerators)."""
    def epoch(carry, x, y, order, lrs, key):
        def body(c, i):  # after a non-finite loss the remaining steps are not computed
            return jax.lax.cond(c[-1], lambda: step(c, x, y, order, lrs, key, i), lambda: c), None
        return jax.lax.scan(body, carry, jnp.arange(order.shape[0]))[0]
    return epoch
