"""The semantics table: one row per framework and knob, its canonical and native values and their source.

Rendered from `sensitivity.core.semantics` (the values the code runs and the contract holds), so the docs
(docs/semantics.md, kept equal by a test) and `sensitivity semantics` cannot drift from the code.
"""
from __future__ import annotations

from sensitivity.core import semantics
from sensitivity.core.spec import LR_POLICIES, OPTIMIZERS

FORMULAS = {
    "momentum": {"inside": "v = mu*v - lr*g; w += v", "outside": "b = mu*b + g; w -= lr*b"},
    "nesterov": {"inside": "v = mu*v - lr*g; w += mu*v - lr*g", "outside": "b = mu*b + g; w -= lr*(g + mu*b)",
                 "chainer": "v = mu*v - lr*g; w += mu^2*v - (1+mu)*lr*g",
                 "mxnet": "w += mu^2*v - (1+mu)*lr*g; then v = mu*v - lr*(g + wd*(w_new - w)): the decay at the "
                          "moved weight"},
    "adam_eps": {"corrected": "w -= lr*m_hat/(sqrt(s_hat) + eps)",
                 "uncorrected": "w -= lr*sqrt(1-b2^t)/(1-b1^t)*m/(sqrt(s) + eps)"},
    "rmsprop_eps": {"outside": "s = rho*s + (1-rho)*g^2; w -= lr*g/(sqrt(s) + eps)",
                    "inside": "s = rho*s + (1-rho)*g^2; w -= lr*g/sqrt(s + eps)"},
    "weight_decay": {"l2": "g += wd*w (L2 in the gradient)", "decoupled": "w -= lr*wd*w before the update"},
}
HEADER = ("framework", "knob", "canonical", "native", "source")


def _update(rule, optimizer: str) -> str:
    if optimizer == "sgd":
        return "w -= lr*g"
    field = {"momentum": "momentum", "nesterov": "nesterov", "adam": "adam_eps", "rmsprop": "rmsprop_eps"}[optimizer]
    return FORMULAS[field][getattr(rule, field)]


def _init(init) -> str:
    kernel = {"uniform": f"uniform +-{init.formula}", "normal": f"normal, sd {init.formula}",
              "truncated_normal": f"normal cut at +-2 sd, sd {init.formula}"}[init.kernel]
    return f"{init.name}: kernel {kernel}; bias " + ("zeros" if init.bias == "zeros" else f"uniform +-{init.formula}")


def rows(frameworks=None) -> list:
    """(framework, knob, canonical value, native value, source) for every framework and knob."""
    canonical, out = semantics.CANONICAL_RULE, []
    for name in frameworks or [f for f in semantics.NATIVE if f != "caffe"]:
        native = semantics.NATIVE[name]
        rule, sources = native.rule, native.sources
        for optimizer in OPTIMIZERS:
            value = _update(rule, optimizer)
            if native.optimizers:
                value += f" ({native.optimizers[optimizer]})"
            out.append((name, f"update: {optimizer}", _update(canonical, optimizer), value, sources.get("update", "")))
        out.append((name, "weight decay", FORMULAS["weight_decay"][canonical.weight_decay],
                    FORMULAS["weight_decay"][rule.weight_decay], sources.get("weight_decay", sources.get("update", ""))))
        for field, label in (("adam_epsilon", "Adam epsilon"), ("rmsprop_epsilon", "RMSprop epsilon"),
                             ("rho", "RMSprop rho")):
            out.append((name, label, f"{getattr(canonical, field):g}", f"{getattr(rule, field):g}",
                        sources.get("eps_rho", sources.get("update", ""))))
        out.append((name, "initialiser", _init(semantics.NEUTRAL_INIT), _init(native.init), sources.get("init", "")))
        schedules = ("; ".join(f"{p}: {native.schedules[p]}" for p in LR_POLICIES) + f" ({native.stepping})"
                     if native.schedules else "the loop's rates (no scheduler)")
        out.append((name, "schedule", "Caffe's policy in float64 (optim.lr_schedule), the rate fed per step",
                    schedules, sources.get("schedule", "")))
    return out


def markdown(frameworks=None) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("*", "\\*")

    lines = ["| " + " | ".join(HEADER) + " |", "|" + " --- |" * len(HEADER)]
    lines += ["| " + " | ".join(cell(str(v)) for v in row) + " |" for row in rows(frameworks)]
    return "\n".join(lines) + "\n"
