"""JAX adapter: a Flax NNX model (NHWC), a jitted training step, data resident on the device.

Flax NNX is the API flax 0.12 documents as current (Linen is the legacy one). The model is used in NNX's
functional form: `nnx.split` once into a graph definition and a parameter State, `nnx.merge` inside the
jitted functions, so a step is a pure function of (carry, data, order, lrs, key, i). On GPU/TPU the epoch
is one `lax.scan` of that step (one dispatch); on CPU the step is dispatched per step, asynchronously,
because XLA:CPU runs convolution gradients inside a loop nine times slower (see `build`). Design notes:
- No `init` call: the neutral weights are written into an abstract model (`nnx.eval_shape`), so nothing
  is compiled op by op (Linen's `model.init` outside jit costs 5 to 7 s here). The framework's own
  initialiser (`init=framework`: lecun_normal kernels, zero biases) runs as one `nnx.jit`.
- Batches are always full (the loop drops the last partial batch), so the step never recompiles; the
  epoch is compiled ahead of time in `compile` for the epoch's shape (steps x batch).
- The optimizer is written here in the canonical form: optax's `sgd(momentum=...)` keeps lr outside the
  velocity (PyTorch's form) and optax's RMSprop puts epsilon inside the square root by default
  (eps_in_sqrt=True); optax's Adam matches but one rule set is clearer than two. lambda*w joins
  every gradient; each step's lr comes from the `lrs` array passed into the epoch.
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

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from sensitivity.frameworks.base import EpochStats
from sensitivity.models import (Conv, Dense, Dropout, Flatten, ModelSpec, Pool, ReLU, from_nhwc, neutral_kernel,
                                nhwc_kernel, pooled_size, to_nhwc)
from sensitivity.optim import ADAM_BETA1, ADAM_BETA2, EPSILON, RMSPROP_RHO


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
            pads = tuple((0, max((pooled_size(n, layer.kernel, layer.stride, layer.ceil) - 1) * layer.stride
                                 + layer.kernel - n, 0)) for n in shape[1:])
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
        import flax
        return f"{jax.__version__} (flax {flax.__version__}, {jax.default_backend()})"

    controls_threads = False  # see the module's docstring

    def setup(self, threads: int, device: str, seed: int) -> None:
        self.device = jax.devices("cpu")[0] if device == "cpu" else jax.devices("gpu")[int(device[4:] or 0)]
        self.seed, self.key = seed, jax.random.PRNGKey(seed)
        self.epochs_done = 0

    def build(self, model: ModelSpec, input_shape: tuple, classes: int, weights, spec) -> None:
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
        self.opt = _init_state(spec.optimizer, self.params)
        self._step = _make_step(self.graph_train, spec.optimizer, spec.momentum, spec.weight_decay)
        # XLA:CPU (jaxlib 0.10.2) leaves the filter-gradient convolutions inside a while loop in a layout
        # Eigen cannot take (dim_labels f01b_i01o->01bf) and emits them as plain loops: a LeNet epoch as
        # one lax.scan took 22 s of CPU against 2.4 s for the same steps dispatched one by one. So on CPU
        # the jitted step is dispatched per step (asynchronously: the carry stays on the device, nothing
        # waits until the epoch ends); on accelerators the epoch is one scanned program.
        self.use_scan(self.device.platform != "cpu")
        self._forward = jax.jit(lambda params, x: nnx.merge(self.graph_eval, params)(x))

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

    def set_data(self, x_train: np.ndarray, y_train: np.ndarray) -> None:
        self.x = jax.device_put(to_nhwc(x_train), self.device)
        self.y = jax.device_put(y_train.astype(np.int32), self.device)

    def _carry(self):
        zero = lambda dtype: jax.device_put(np.zeros((), dtype), self.device)  # noqa: E731
        return (self.params, self.opt, zero(np.float32), zero(np.int32), jax.device_put(np.True_, self.device))

    def compile(self, batch_size: int) -> None:
        """Compile the step (CPU) or epoch ahead of time for (len(data) // batch_size) steps; no step is
        taken."""
        steps = len(self.y) // batch_size
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


def _init_state(kind: str, params) -> dict:
    zeros = lambda: jax.tree.map(jnp.zeros_like, params)  # noqa: E731
    state = {"t": jnp.zeros((), jnp.int32)}
    if kind in ("momentum", "nesterov", "adam"):
        state["v"] = zeros()
    if kind in ("adam", "rmsprop"):
        state["s"] = zeros()
    return state


def _canonical_update(kind: str, mu: float, wd: float, params, grads, state: dict, lr):
    """One step of sensitivity.optim's formulas on parameter trees; returns (params, state)."""
    tree = jax.tree.map
    g = tree(lambda g, w: g + wd * w, grads, params) if wd else grads
    state = dict(state, t=state["t"] + 1)
    if kind == "sgd":
        return tree(lambda w, g: w - lr * g, params, g), state
    if kind in ("momentum", "nesterov"):
        v = tree(lambda v, g: mu * v - lr * g, state["v"], g)
        step = v if kind == "momentum" else tree(lambda v, g: mu * v - lr * g, v, g)
        return tree(jnp.add, params, step), dict(state, v=v)
    if kind == "adam":
        t = state["t"].astype(jnp.float32)
        m = tree(lambda m, g: ADAM_BETA1 * m + (1 - ADAM_BETA1) * g, state["v"], g)
        s = tree(lambda s, g: ADAM_BETA2 * s + (1 - ADAM_BETA2) * g * g, state["s"], g)
        c1, c2 = 1 - ADAM_BETA1 ** t, 1 - ADAM_BETA2 ** t
        new = tree(lambda w, m, s: w - lr * (m / c1) / (jnp.sqrt(s / c2) + EPSILON), params, m, s)
        return new, dict(state, v=m, s=s)
    s = tree(lambda s, g: RMSPROP_RHO * s + (1 - RMSPROP_RHO) * g * g, state["s"], g)
    return tree(lambda w, g, s: w - lr * g / (jnp.sqrt(s) + EPSILON), params, g, s), dict(state, s=s)


def _make_step(graph, kind: str, mu: float, wd: float):
    """One step on the carry (params, opt, total, steps, finite): batch order[i] at rate lrs[i]. The step
    that sees the first non-finite loss counts (finite turns False) and later ones are not counted; the
    updates are not masked (selects over every weight cost 7% of a LeNet epoch on CPU, and lax.cond makes
    XLA:CPU emit the convolutions as slow loops): by then the weights are not finite anyway, as in the
    other adapters, and dispatching stops at the next check (train_epoch) or the scan skips the rest."""
    def loss_fn(params, xb, yb, key):
        logits = nnx.merge(graph, params)(xb, rngs=nnx.Rngs(dropout=key))
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb).mean()

    grad_fn = jax.value_and_grad(loss_fn)

    def step(carry, x, y, order, lrs, key, i):
        params, opt, total, steps, finite = carry
        loss, grads = grad_fn(params, x[order[i]], y[order[i]], jax.random.fold_in(key, i))
        new_params, new_opt = _canonical_update(kind, mu, wd, params, grads, opt, lrs[i])
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
