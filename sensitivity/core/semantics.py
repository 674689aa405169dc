"""Training semantics: what each framework's optimizers and initialisers do, as data.

Two regimes (TrialSpec.semantics):
- native (the default): the framework's own public API: its optimizer classes and schedulers, its default
  initialisers, its epsilons, rho and weight-decay form. What a user of the framework gets.
- canonical (the control): the same formulas in every framework (sensitivity.core.optim), the same numpy
  initial weights, so differences between frameworks are numerics only.

A regime is a setting of five knobs, each taking the canonical value or one framework's native value:
  init          the initial weights' distribution
  update        the update formula: momentum (lr inside or outside the velocity), Nesterov's form,
                where Adam's and RMSprop's epsilon sits
  weight_decay  L2 added to the gradient, or decoupled (w -= lr*wd*w before the update)
  eps_rho       Adam's and RMSprop's epsilon and RMSprop's rho
  schedule      the per-step learning rates from Caffe's float64 formula, or from the framework's scheduler
`TrialSpec.knobs` sets knobs one by one (`sensitivity ablate` walks them); `resolve` turns a spec into
the Rule and initialiser a trial runs. A trial whose optimizer knobs are all its own framework's runs the
framework's stock classes ("stock"); any other setting runs the hand-written `optim.rule_update`.
Docs: docs/semantics.md (every value below with its source).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable
import numpy as np

KNOBS = ("init", "update", "weight_decay", "eps_rho", "schedule")
OPTIMIZER_KNOBS = ("update", "weight_decay", "eps_rho", "schedule")
CANONICAL = "canonical"


@dataclass(frozen=True)
class Rule:
    """An optimizer's formulas beyond the hyper-parameters (lr, momentum, weight_decay) a trial sets.

    momentum:     "inside":  v = mu*v - lr*g; w += v           (Caffe, Keras, MXNet, Chainer)
                  "outside": b = mu*b + g;    w -= lr*b        (torch, optax)
    nesterov:     "inside":  v = mu*v - lr*g; w += mu*v - lr*g (Caffe, Keras)
                  "outside": b = mu*b + g;    w -= lr*(g + mu*b) (torch, optax, MXNet's NAG)
                  "chainer": v = mu*v - lr*g; w += mu^2*v - (1+mu)*lr*g (Chainer's NesterovAG)
                  "mxnet":   w += mu^2*v - (1+mu)*lr*g, then v = mu*v - lr*(g + wd*(w_new - w)): Caffe's
                             step, but the velocity's decay term reads the moved weight (MXNet 1.9.1's NAG,
                             whose kernel writes the weight first; its docstring gives the "outside" form)
    adam_eps:     "corrected":   w -= lr*m_hat/(sqrt(s_hat) + eps)                (torch, optax)
                  "uncorrected": w -= lr*sqrt(1-b2^t)/(1-b1^t)*m/(sqrt(s) + eps)  (Keras, MXNet, Chainer)
    rmsprop_eps:  "outside": w -= lr*g/(sqrt(s) + eps); "inside": w -= lr*g/sqrt(s + eps)
    weight_decay: "l2": g += wd*w; "decoupled": w -= lr*wd*w before the update (Keras 3's weight_decay)
    """

    momentum: str = "inside"
    nesterov: str = "inside"
    adam_eps: str = "corrected"
    rmsprop_eps: str = "outside"
    adam_epsilon: float = 1e-8
    rmsprop_epsilon: float = 1e-8
    rho: float = 0.9
    weight_decay: str = "l2"

    def as_dict(self) -> dict:
        return asdict(self)


# Which Rule fields each optimizer knob carries (schedule and init are not Rule fields).
KNOB_FIELDS = {"update": ("momentum", "nesterov", "adam_eps", "rmsprop_eps"),
               "eps_rho": ("adam_epsilon", "rmsprop_epsilon", "rho"),
               "weight_decay": ("weight_decay",)}
# Which Rule fields matter to each optimizer (a knob that changes none of them changes nothing).
OPTIMIZER_FIELDS = {"sgd": (), "momentum": ("momentum",), "nesterov": ("nesterov",),
                    "adam": ("adam_eps", "adam_epsilon"), "rmsprop": ("rmsprop_eps", "rmsprop_epsilon", "rho")}

CANONICAL_RULE = Rule()


@dataclass(frozen=True)
class Init:
    """A documented initial-weight distribution of Conv and Dense layers.

    kernel: "uniform" (in +-scale), "normal" (standard deviation scale) or "truncated_normal" (variance
    scale^2, cut at +-2 standard deviations before the correction that restores that variance, as JAX
    does); scale = kernel_scale(fan_in, fan_out), a convolution's fans including its kernel's area.
    bias: "zeros" or "uniform" in +-bias_scale(fan_in, fan_out).
    """

    name: str
    kernel: str
    kernel_scale: Callable
    formula: str  # kernel_scale as written in the docs
    bias: str = "zeros"
    bias_scale: Callable = lambda fan_in, fan_out: 0.0  # noqa: E731

    def scales(self, fan_in: int, fan_out: int) -> tuple:
        return self.kernel_scale(fan_in, fan_out), self.bias_scale(fan_in, fan_out)


@dataclass(frozen=True)
class Native:
    """One framework's native semantics, each value with the source it is documented in."""

    rule: Rule
    init: Init
    optimizers: dict  # optimizer -> the stock class as a native trial calls it ({} when it has none)
    schedules: dict  # lr policy -> the scheduler as a native trial builds it ({} when it has none)
    stepping: str  # how the scheduler is stepped
    sources: dict  # knob -> the source file or page its native value comes from

    @property
    def classes(self) -> str:
        return ", ".join(dict.fromkeys(v.split("(")[0] for v in self.optimizers.values()))

    @property
    def scheduler(self) -> str:
        return self.stepping if self.schedules else ""


def _glorot(fan_in, fan_out):
    return math.sqrt(6 / (fan_in + fan_out))


def _lecun(fan_in, fan_out):
    return 1 / math.sqrt(fan_in)


TUTORIAL_GLOROT = Init("Glorot uniform (numpy RandomState)", "uniform", _glorot, "sqrt(6/(fan_in+fan_out))")
KERAS_GLOROT = Init("glorot_uniform", "uniform", _glorot, "sqrt(6/(fan_in+fan_out))")
NEUTRAL_INIT = Init("neutral: Caffe's xavier filler (numpy)", "uniform",
                    lambda fan_in, fan_out: math.sqrt(3 / fan_in), "sqrt(3/fan_in)")
KERAS_RULE = Rule(adam_eps="uncorrected", rmsprop_eps="inside", adam_epsilon=1e-7, rmsprop_epsilon=1e-7,
                  weight_decay="decoupled")
KERAS_OPTIMIZERS = {
    "sgd": "keras.optimizers.SGD(schedule, weight_decay=wd)",
    "momentum": "keras.optimizers.SGD(schedule, momentum=mu, weight_decay=wd)",
    "nesterov": "keras.optimizers.SGD(schedule, momentum=mu, nesterov=True, weight_decay=wd)",
    "adam": "keras.optimizers.Adam(schedule, weight_decay=wd)",
    "rmsprop": "keras.optimizers.RMSprop(schedule, weight_decay=wd)"}
KERAS_SCHEDULES = {
    "fixed": "the float lr", "step": "ExponentialDecay(lr, stepsize, gamma, staircase=True)",
    "multistep": "PiecewiseConstantDecay([s - 1 for s in stepvalues], [lr * gamma**k])",
    "exp": "ExponentialDecay(lr, 1, gamma)", "inv": "a LearningRateSchedule subclass",
    "cosine": "CosineDecay(lr, total_steps)"}
KERAS_SOURCES = {
    "update": "keras/src/optimizers/sgd.py, adam.py, rmsprop.py (update_step)",
    "eps_rho": "keras.optimizers.Adam(epsilon=1e-7), RMSprop(rho=0.9, epsilon=1e-7)",
    "weight_decay": "keras/src/optimizers/base_optimizer.py (_apply_weight_decay)",
    "init": "keras/src/layers/core/dense.py, convolutional/base_conv.py: glorot_uniform kernels, zero biases",
    "schedule": "keras/src/optimizers/schedules/learning_rate_schedule.py"}
KERAS_STEPPING = "keras.optimizers.schedules, evaluated at optimizer.iterations"
HAND_WRITTEN = {"update": "no optimizer library: the Theano deep-learning tutorials' hand-written update "
                          "(the canonical formulas)",
                "init": "the tutorials' convolutional_mlp.py: uniform +-sqrt(6/(fan_in+fan_out)), biases zero",
                "schedule": "none: the rate is computed in Python for each step"}

NATIVE = {
    "torch": Native(
        Rule(momentum="outside", nesterov="outside", rho=0.99),
        Init("kaiming_uniform(a=sqrt(5)), bias uniform", "uniform", _lecun, "1/sqrt(fan_in)", "uniform", _lecun),
        {"sgd": "torch.optim.SGD(params, lr, weight_decay=wd)",
         "momentum": "torch.optim.SGD(params, lr, momentum=mu, weight_decay=wd)",
         "nesterov": "torch.optim.SGD(params, lr, momentum=mu, nesterov=True, weight_decay=wd)",
         "adam": "torch.optim.Adam(params, lr, weight_decay=wd)",
         "rmsprop": "torch.optim.RMSprop(params, lr, weight_decay=wd)"},
        {"fixed": "none", "step": "StepLR(step_size=stepsize, gamma)",
         "multistep": "MultiStepLR(milestones=stepvalues, gamma)", "exp": "ExponentialLR(gamma)",
         "inv": "LambdaLR(lambda it: (1 + gamma*it) ** -power)", "cosine": "CosineAnnealingLR(T_max=total_steps)"},
        "torch.optim.lr_scheduler, .step() after every optimizer.step()",
        {"update": "torch/optim/sgd.py, adam.py, rmsprop.py (the update rules in their docstrings)",
         "eps_rho": "torch.optim.Adam(eps=1e-8), RMSprop(alpha=0.99, eps=1e-8)",
         "weight_decay": "torch.optim.*(weight_decay=): added to the gradient",
         "init": "torch/nn/modules/conv.py, linear.py (reset_parameters)",
         "schedule": "torch/optim/lr_scheduler.py"}),
    "tensorflow": Native(KERAS_RULE, KERAS_GLOROT, {k: "tf." + v + " on tf.Variables" for k, v in
                                                    KERAS_OPTIMIZERS.items()},
                         KERAS_SCHEDULES, KERAS_STEPPING, KERAS_SOURCES),
    "keras": Native(KERAS_RULE, KERAS_GLOROT, KERAS_OPTIMIZERS, KERAS_SCHEDULES, KERAS_STEPPING, KERAS_SOURCES),
    "jax": Native(
        Rule(momentum="outside", nesterov="outside", rmsprop_eps="inside"),
        Init("lecun_normal (truncated normal)", "truncated_normal", _lecun, "1/sqrt(fan_in)"),
        {"sgd": "optax.sgd(schedule)", "momentum": "optax.sgd(schedule, momentum=mu)",
         "nesterov": "optax.sgd(schedule, momentum=mu, nesterov=True)", "adam": "optax.adam(schedule)",
         "rmsprop": "optax.rmsprop(schedule)"},
        {"fixed": "the float lr", "step": "exponential_decay(lr, stepsize, gamma, staircase=True)",
         "multistep": "piecewise_constant_schedule(lr, {s: gamma for s in stepvalues})",
         "exp": "exponential_decay(lr, 1, gamma)", "inv": "a schedule function",
         "cosine": "cosine_decay_schedule(lr, total_steps)"},
        "optax schedules, read at the optimizer's step count",
        {"update": "optax/_src/alias.py, transform.py (trace, scale_by_adam, scale_by_rms)",
         "eps_rho": "optax.adam(eps=1e-8), optax.rmsprop(decay=0.9, eps=1e-8, eps_in_sqrt=True)",
         "weight_decay": "optax.add_decayed_weights(wd), chained before the optimizer: added to the gradient",
         "init": "flax/nnx/nn/linear.py: default_kernel_init = initializers.lecun_normal(), biases zero",
         "schedule": "optax/schedules/_schedule.py"}),
    "mxnet": Native(
        Rule(nesterov="mxnet", adam_eps="uncorrected", rmsprop_eps="inside"),
        Init("Uniform(0.07), Block.initialize()'s default", "uniform", lambda fan_in, fan_out: 0.07, "0.07"),
        {"sgd": "gluon.Trainer(params, mx.optimizer.SGD(wd=wd, lr_scheduler))",
         "momentum": "gluon.Trainer(params, mx.optimizer.SGD(momentum=mu, wd=wd, lr_scheduler))",
         "nesterov": "gluon.Trainer(params, mx.optimizer.NAG(momentum=mu, wd=wd, lr_scheduler))",
         "adam": "gluon.Trainer(params, mx.optimizer.Adam(wd=wd, lr_scheduler))",
         "rmsprop": "gluon.Trainer(params, mx.optimizer.RMSProp(wd=wd, lr_scheduler))"},
        {"fixed": "none", "step": "FactorScheduler(stepsize, gamma, stop_factor_lr=0)",
         "multistep": "MultiFactorScheduler(stepvalues, gamma)",
         "exp": "FactorScheduler(1, gamma, stop_factor_lr=0)", "inv": "an LRScheduler subclass",
         "cosine": "CosineScheduler(total_steps + 1, warmup_steps=1)"},
        "mx.lr_scheduler, called with num_update (1 at the first update)",
        {"update": "mxnet/optimizer/optimizer.py (SGD, Adam, RMSProp docstrings and update); NAG measured: "
                   "nag_mom_update (src/operator/optimizer_op-inl.h) with out=weight, not its docstring's form",
         "eps_rho": "mx.optimizer.Adam(epsilon=1e-8), RMSProp(gamma1=0.9, epsilon=1e-8)",
         "weight_decay": "mx.optimizer.*(wd=): added to the rescaled gradient",
         "init": "mxnet/gluon/block.py: initialize(init=initializer.Uniform()); Dense, Conv2D biases 'zeros'",
         "schedule": "mxnet/lr_scheduler.py"}),
    "chainer": Native(
        Rule(nesterov="chainer", adam_eps="uncorrected", rho=0.99),
        Init("LeCunNormal", "normal", _lecun, "1/sqrt(fan_in)"),
        {"sgd": "chainer.optimizers.SGD(lr)", "momentum": "chainer.optimizers.MomentumSGD(lr, mu)",
         "nesterov": "chainer.optimizers.NesterovAG(lr, mu)", "adam": "chainer.optimizers.Adam(alpha=lr)",
         "rmsprop": "chainer.optimizers.RMSprop(lr)"},
        {"fixed": "none", "step": "StepShift(gamma, stepsize)", "multistep": "MultistepShift(gamma, stepvalues)",
         "exp": "ExponentialShift(gamma)", "inv": "InverseShift(gamma, power)",
         "cosine": "an Extension (Chainer 7 has no cosine shift)"},
        "chainer.training.extensions, called after every update",
        {"update": "chainer/optimizers/momentum_sgd.py, nesterov_ag.py, adam.py, rmsprop.py",
         "eps_rho": "chainer.optimizers.Adam(eps=1e-8), RMSprop(alpha=0.99, eps=1e-8)",
         "weight_decay": "chainer.optimizer_hooks.WeightDecay(wd): added to the gradient",
         "init": "chainer/links/connection/linear.py, convolution_2d.py: initialW None is LeCunNormal, bias 0",
         "schedule": "chainer/training/extensions/*_shift.py"}),
    "theano": Native(CANONICAL_RULE, TUTORIAL_GLOROT, {}, {}, "", HAND_WRITTEN),
    "pytensor": Native(CANONICAL_RULE, TUTORIAL_GLOROT, {}, {}, "", HAND_WRITTEN),
    "caffe": Native(CANONICAL_RULE, NEUTRAL_INIT, {}, {}, "",
                    {"update": "caffe/src/caffe/solvers/*.cpp: the canonical formulas are Caffe's",
                     "init": "Caffe's LeNet and cifar10_quick use the xavier filler: the neutral weights",
                     "schedule": "caffe/src/caffe/solvers/sgd_solver.cpp (GetLearningRate): Caffe's policies"}),
}


class SemanticsError(ValueError):
    """A setting a framework's native API cannot express; one line naming framework, knob and allowed."""


@dataclass(frozen=True)
class Resolved:
    """What a trial runs: each knob's source, the composed Rule, and whether the stock classes run it."""

    knobs: dict  # knob -> "canonical" or a framework name
    rule: Rule
    stock: bool  # the framework's own optimizer classes and scheduler (else optim.rule_update)

    @property
    def init(self) -> str:
        return self.knobs["init"]

    @property
    def framework_schedule(self) -> bool:
        return self.knobs["schedule"] != CANONICAL


def rule_of(source: str) -> Rule:
    return CANONICAL_RULE if source == CANONICAL else NATIVE[source].rule


def compose(knobs: dict) -> Rule:
    """The Rule whose fields each come from the source its knob names."""
    values = {}
    for knob, names in KNOB_FIELDS.items():
        source = rule_of(knobs[knob])
        values.update({name: getattr(source, name) for name in names})
    return Rule(**values)


def knob_sources(spec) -> dict:
    """Each knob's source for `spec`: its semantics, then `init`, then explicit `knobs`. A framework
    without a scheduler (Theano, PyTensor) steps natively at the loop's rates: its schedule is canonical."""
    base = spec.framework if spec.semantics == "native" else CANONICAL
    knobs = {knob: base for knob in KNOBS}
    if base != CANONICAL and not NATIVE[base].schedules:  # no scheduler: its native rates are the loop's
        knobs["schedule"] = CANONICAL
    if spec.init is not None:
        knobs["init"] = CANONICAL if spec.init == "neutral" else spec.framework
    knobs.update(spec.knobs or {})
    return knobs


def resolve(spec) -> Resolved:
    """The semantics a spec runs; raises SemanticsError for what its framework cannot express."""
    check(spec)
    knobs = knob_sources(spec)
    return Resolved(knobs, compose(knobs), _stock(spec.framework, knobs))


def _stock(engine: str, knobs: dict) -> bool:
    return bool(NATIVE[engine].classes) and all(knobs[k] == engine for k in OPTIMIZER_KNOBS)


def check(spec) -> None:
    """Refuse, before anything runs, a knob a framework's API cannot express."""
    engine = spec.framework
    if engine not in NATIVE:
        return  # an unknown framework is refused where frameworks are checked
    knobs = knob_sources(spec)
    for knob, source in knobs.items():
        if source != CANONICAL and source not in NATIVE:
            raise SemanticsError(f"knobs.{knob}: unknown source {source!r}; allowed: canonical, "
                                 f"{', '.join(NATIVE)}")
    if knobs["schedule"] not in (CANONICAL, engine):
        raise SemanticsError(f"{engine}: knobs.schedule: {knobs['schedule']}'s scheduler cannot step {engine}; "
                             f"allowed: canonical, {engine}")
    if knobs["schedule"] == engine and not NATIVE[engine].scheduler and spec.lr_policy != "fixed":
        raise SemanticsError(f"{engine}: knobs.schedule: {engine} has no learning-rate scheduler; "
                             f"allowed: canonical")
    if _stock(engine, knobs) and engine == "torch" and spec.optimizer == "nesterov" and spec.momentum == 0:
        raise SemanticsError("torch: optimizer nesterov with momentum 0: torch.optim.SGD(nesterov=True) refuses "
                             "it; allowed: momentum > 0, or semantics canonical")


def relevant_fields(spec) -> tuple:
    """The Rule fields that change what `spec` computes (weight decay only when it is set)."""
    names = OPTIMIZER_FIELDS[spec.optimizer]
    return names + (("weight_decay",) if spec.weight_decay > 0 else ())


def describe(spec) -> dict:
    """What a result records of its semantics (the env's `semantics` entry)."""
    resolved = resolve(spec)
    engine = NATIVE[spec.framework]
    framework_schedule = resolved.framework_schedule and spec.lr_policy in engine.schedules
    return {"regime": spec.semantics, "knobs": resolved.knobs, "rule": resolved.rule.as_dict(),
            "init": init_of(resolved.init).name,
            "optimizer": engine.optimizers[spec.optimizer] if resolved.stock
            else "hand-written: sensitivity.core.optim.rule_update",
            "schedule": (f"{engine.schedules[spec.lr_policy]} ({engine.stepping})" if framework_schedule
                         else "Caffe's policy in float64 (sensitivity.core.optim.lr_schedule), fed per step")}


def init_of(source: str) -> Init:
    return NEUTRAL_INIT if source == CANONICAL else NATIVE[source].init


def fans(kernel_shape: tuple) -> tuple:
    """(fan_in, fan_out) of a neutral-layout kernel: (out, in, kh, kw) or (in, out)."""
    if len(kernel_shape) == 4:
        area = kernel_shape[2] * kernel_shape[3]
        return kernel_shape[1] * area, kernel_shape[0] * area
    return kernel_shape[0], kernel_shape[1]


def draw_init(source: str, param_shapes: list, seed: int) -> list:
    """Initial weights [(kernel, bias)] drawn by numpy from `source`'s documented distribution: how a
    framework's initialiser is reproduced on another framework (an ablation step), never a native trial's."""
    init, rng, out = init_of(source), np.random.default_rng(seed), []
    for kernel_shape, bias_shape in param_shapes:
        scale, bias_scale = init.scales(*fans(kernel_shape))
        if init.kernel == "uniform":
            kernel = rng.uniform(-scale, scale, kernel_shape)
        elif init.kernel == "normal":
            kernel = rng.normal(0.0, scale, kernel_shape)
        else:  # truncated at +-2 before correcting the standard deviation, as jax.nn.initializers does
            kernel = _truncated_normal(rng, kernel_shape) * scale / TRUNCATED_STD
        bias = rng.uniform(-bias_scale, bias_scale, bias_shape) if init.bias == "uniform" else np.zeros(bias_shape)
        out.append((kernel.astype(np.float32), bias.astype(np.float32)))
    return out


TRUNCATED_STD = 0.87962566103423978  # the standard deviation of a standard normal cut at +-2


def _truncated_normal(rng, shape):
    # lazy: scipy
    from scipy.stats import truncnorm
    return truncnorm.rvs(-2.0, 2.0, size=shape, random_state=np.random.RandomState(rng.integers(2**31)))


def expected_moments(init: Init, kernel_shape: tuple) -> dict:
    """Bound, mean and variance of the kernel and bias distributions, for the contract's checks."""
    scale, bias_scale = init.scales(*fans(kernel_shape))
    kernel = {"uniform": (scale, scale ** 2 / 3), "normal": (math.inf, scale ** 2),
              "truncated_normal": (2 * scale / TRUNCATED_STD, scale ** 2)}[init.kernel]
    bias = (bias_scale, bias_scale ** 2 / 3) if init.bias == "uniform" else (0.0, 0.0)
    return {"kernel": {"bound": kernel[0], "mean": 0.0, "var": kernel[1]},
            "bias": {"bound": bias[0], "mean": 0.0, "var": bias[1]}}
