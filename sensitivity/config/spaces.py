"""Search-space files -> a validated Space -> Optuna distributions and TrialSpecs.

The schema is documented in search_spaces/README.md. Validation happens before anything runs: an unknown
key, a wrong type, low above high, an unknown framework or dataset is a SpaceError whose one-line message
names the file, the key path and what is allowed.

A space may give lr relative to each optimizer (`lr_reference`, issue 41): the parameter `lr_decades` (u) then
stands for lr = lr_reference[optimizer] x 10^u, so that one axis means the same distance from a sensible rate under
every optimizer. The study stores u; each trial's spec holds the absolute lr (`Space.trial_spec`).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sensitivity import datasets
from sensitivity.config.files import read_mapping
from sensitivity.core.models import MODELS
from sensitivity.core.paths import check_name
from sensitivity.core.spec import OPTIMIZERS, TrialSpec
from sensitivity.frameworks import FRAMEWORKS

RELATIVE_LR = "lr_decades"  # lr as decades from its optimizer's reference (`Space.lr_reference`)
MAX_DECADES = 12  # how far lr_decades may reach from a reference, either way
# Fields a space may tune or fix; the framework is a parameter of its own (the `frameworks` list).
TUNABLE = ("batch_size", "lr", "epochs", "iterations", "optimizer", "momentum", "weight_decay", "lr_policy",
           "gamma", "power", "stepsize", "init", "backend", "semantics", RELATIVE_LR)
FIXABLE = TUNABLE + ("threads", "device", "timeout", "stepvalues")
# What a sweep may optimise: validation accuracy, never test accuracy (`accuracy`, recorded beside).
METRICS = ("val_accuracy", "loss", "train_time_s", "setup_time_s", "compile_time_s", "test_time_s",
           "throughput", "peak_rss_mb", "cpu_percent", "flops_per_s")


MAX_SEEDS = 1_000  # seeds per configuration
MAX_CHOICES = 1_000  # choices of a categorical parameter
MAX_STEPS = 1_000_000  # values a float parameter with a step can take: (high - low) / step


class SpaceError(ValueError):
    """A search space that cannot be used; one line naming the file, the key path and what is allowed."""


def _one_of(names, allowed, wording: str):
    """`names` as they are, if each is in `allowed`; else a ValueError: `wording` for the first that is not,
    and the allowed values."""
    for name in names:
        if name not in allowed:
            raise ValueError(f"{wording.format(name)}; allowed: {', '.join(allowed)}")
    return names


def _check_range(low, high, log: bool) -> None:
    if low > high:
        raise ValueError(f"low {low} is above high {high}")
    if log and low <= 0:
        raise ValueError("log needs low > 0")


class _Strict(BaseModel):
    # strict: no 'yes' for a boolean, no "2" for an integer; lists stay lists (strict=False on tuples)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class IntParam(_Strict):
    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = Field(1, gt=0)

    @model_validator(mode="after")
    def _range(self):
        _check_range(self.low, self.high, self.log)
        return self


class FloatParam(_Strict):
    type: Literal["float"]
    low: float
    high: float
    log: bool = False
    step: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _range(self):
        _check_range(self.low, self.high, self.log)
        if self.log and self.step is not None:
            raise ValueError("step and log cannot be combined")
        if self.step is not None and (self.high - self.low) / self.step > MAX_STEPS:
            raise ValueError(f"step {self.step} makes more than {MAX_STEPS:,} values between low and high")
        return self


class CategoricalParam(_Strict):
    type: Literal["categorical"]
    choices: tuple[Union[bool, int, float, str], ...] = Field(min_length=1, max_length=MAX_CHOICES, strict=False)


Param = Annotated[Union[IntParam, FloatParam, CategoricalParam], Field(discriminator="type")]


def _fits(spec, shape: tuple) -> bool:
    try:
        spec.shapes(shape)
        return True
    except ValueError:
        return False


class Objective(_Strict):
    metric: Literal[METRICS]
    direction: Literal["maximize", "minimize"]


class Space(_Strict):
    study: str = Field(min_length=1)
    dataset: str
    model: Optional[str] = None
    frameworks: tuple[str, ...] = Field(min_length=1, strict=False)
    parameters: dict[str, Param] = Field(default_factory=dict)
    fixed: dict[str, Any] = Field(default_factory=dict)  # each value checked as TrialSpec's (_check_fixed_values)
    objectives: tuple[Objective, ...] = Field(min_length=1, strict=False)
    val_fraction: float = Field(0.2, gt=0, lt=1)
    seeds: int = Field(1, gt=0, le=MAX_SEEDS)
    lr_reference: Optional[dict[str, float]] = None  # optimizer -> the lr that lr_decades = 0 stands for

    @field_validator("study")
    @classmethod
    def _safe_study_name(cls, value):
        return check_name(value)

    @field_validator("dataset")
    @classmethod
    def _known_dataset(cls, value):
        return _one_of([value], sorted(datasets.REGISTRY), "unknown dataset {!r}")[0]

    @field_validator("model")
    @classmethod
    def _known_model(cls, value):
        return value if value is None else _one_of([value], sorted(MODELS), "unknown model {!r}")[0]

    @field_validator("frameworks")
    @classmethod
    def _known_frameworks(cls, value):
        if len(set(_one_of(value, FRAMEWORKS, "unknown framework {!r}"))) != len(value):
            raise ValueError("a framework is listed twice")
        return value

    @field_validator("parameters")
    @classmethod
    def _tunable(cls, value):
        return _one_of(value, TUNABLE, "{!r} cannot be tuned")

    @field_validator("fixed")
    @classmethod
    def _fixable(cls, value):
        return _one_of(value, FIXABLE, "{!r} cannot be fixed")

    @model_validator(mode="after")
    def _consistent(self):
        both = set(self.parameters) & set(self.fixed)
        if both:
            raise ValueError(f"{sorted(both)[0]!r} is both a parameter and fixed")
        metrics = [o.metric for o in self.objectives]
        if len(set(metrics)) != len(metrics):
            raise ValueError("an objective metric is listed twice")
        self._check_relative_lr()
        if self.model is not None:  # a trial of a model that does not fit would fail only once Ray ran it
            shape = datasets.REGISTRY[self.dataset].input_shape
            try:
                MODELS[self.model].shapes(shape)
            except ValueError as exc:
                fitting = [name for name, spec in sorted(MODELS.items()) if _fits(spec, shape)]
                size = "x".join(map(str, shape))
                raise ValueError(f"model {self.model} does not fit the {size} inputs of {self.dataset} ({exc}); "
                                 f"allowed on {self.dataset}: {', '.join(fitting)}") from None
        return self

    def _check_relative_lr(self) -> None:
        relative = RELATIVE_LR in self.parameters or RELATIVE_LR in self.fixed
        if self.lr_reference is None:
            if relative:
                raise ValueError(f"{RELATIVE_LR} needs lr_reference: the lr each optimizer's {RELATIVE_LR} = 0 "
                                 f"stands for, e.g. {{adam: 0.001, momentum: 0.01, sgd: 0.1}}")
            return
        if not relative:
            raise ValueError(f"lr_reference without {RELATIVE_LR}: give parameters.{RELATIVE_LR} (decades from "
                             "the reference), or remove lr_reference")
        if "lr" in self.parameters or "lr" in self.fixed:
            raise ValueError(f"lr and {RELATIVE_LR} both given: {RELATIVE_LR} sets lr from lr_reference; remove lr")
        for name, value in self.lr_reference.items():
            if name not in OPTIMIZERS:
                raise ValueError(f"lr_reference.{name}: not an optimizer; allowed: {', '.join(OPTIMIZERS)}")
            if not value > 0:
                raise ValueError(f"lr_reference.{name}: {value} is not a positive learning rate")
        reach = ([self.parameters[RELATIVE_LR].low, self.parameters[RELATIVE_LR].high]
                 if RELATIVE_LR in self.parameters and self.parameters[RELATIVE_LR].type != "categorical" else
                 list(self.parameters[RELATIVE_LR].choices) if RELATIVE_LR in self.parameters
                 else [self.fixed[RELATIVE_LR]])
        for value in reach:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or abs(value) > MAX_DECADES:
                raise ValueError(f"{RELATIVE_LR}: {value!r} is not a number of decades within +-{MAX_DECADES}")
        missing = [o for o in self.optimizers() if o not in self.lr_reference]
        if missing:
            raise ValueError(f"lr_reference: optimizer {missing[0]} has no reference; give one for each of "
                             f"{', '.join(self.optimizers())}")

    def optimizers(self) -> tuple:
        """The optimizers its trials can run: the parameter's choices, the fixed one, or TrialSpec's default."""
        if "optimizer" in self.parameters and self.parameters["optimizer"].type == "categorical":
            return tuple(self.parameters["optimizer"].choices)
        return (self.fixed.get("optimizer", TrialSpec.model_fields["optimizer"].default),)

    def absolute(self, fields: dict) -> dict:
        """`fields` with lr_decades made an absolute lr: lr_reference[optimizer] x 10^lr_decades."""
        if RELATIVE_LR not in fields:
            return fields
        fields = dict(fields)
        optimizer = fields.get("optimizer", TrialSpec.model_fields["optimizer"].default)
        fields["lr"] = float(self.lr_reference[optimizer] * 10.0 ** fields.pop(RELATIVE_LR))
        return fields

    def distributions(self) -> dict:
        """Optuna distributions of every parameter, the framework first."""
        # lazy: optuna
        import optuna.distributions as d
        return {"framework": d.CategoricalDistribution(self.frameworks),
                **{name: _distribution(p) for name, p in self.parameters.items()}}

    def trial_spec(self, params: dict, seed: int, **run_options) -> TrialSpec:
        """The TrialSpec of one sampled configuration and seed; run options (timeout, device) last."""
        fields = self.absolute({**self.fixed, **params, "dataset": self.dataset, "model": self.model, "seed": seed,
                                "val_fraction": self.val_fraction})
        fields.update({k: v for k, v in run_options.items() if v is not None})
        if "stepvalues" in fields:
            fields["stepvalues"] = tuple(fields["stepvalues"])
        return TrialSpec(**fields)

    def regimes(self) -> tuple:
        """The semantics its trials run: the parameter's choices, the fixed value, or TrialSpec's default."""
        if "semantics" in self.parameters:
            return tuple(self.parameters["semantics"].choices)
        return (self.fixed.get("semantics", TrialSpec.model_fields["semantics"].default),)

    def fingerprint(self) -> str:
        """A hash of what the space samples and fixes (the study name excluded), the regime always in it:
        a space that leaves semantics to TrialSpec's default hashes as that default."""
        body = self.model_dump(mode="json", exclude={"study"})
        if "semantics" not in self.parameters:
            body["fixed"]["semantics"] = self.regimes()[0]
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def _distribution(p):
    # lazy: optuna
    import optuna.distributions as d
    if isinstance(p, IntParam):
        return d.IntDistribution(p.low, p.high, log=p.log, step=p.step)
    if isinstance(p, FloatParam):
        return d.FloatDistribution(p.low, p.high, log=p.log, step=p.step)
    return d.CategoricalDistribution(p.choices)


def load_space(path, semantics=None, **overrides) -> Space:
    """The validated space of a YAML file; `overrides` (frameworks=[...], seeds=K) replace its values, and
    `semantics` its fixed regime (refused where the space tunes it)."""
    path = Path(path)
    data = read_mapping(path, SpaceError)
    if isinstance(data, dict):
        data.update({k: v for k, v in overrides.items() if v is not None})
        if semantics is not None:
            if "semantics" in (data.get("parameters") or {}):
                raise SpaceError(f"{path}: parameters.semantics: the space tunes the regime; --semantics would "
                                 "replace it: remove one of the two")
            if isinstance(data.get("fixed", {}), dict):
                data["fixed"] = {**data.get("fixed", {}), "semantics": semantics}
    try:
        space = Space.model_validate(data)
    except ValidationError as exc:
        raise SpaceError(f"{path}: {_describe(exc.errors()[0])}") from None
    _check_fixed_values(path, space)
    _check_parameter_values(path, space)
    for name, param in space.parameters.items():
        try:
            _distribution(param)
        except (ValueError, ArithmeticError) as exc:  # Optuna's own checks (decimal arithmetic on the step)
            raise SpaceError(f"{path}: parameters.{name}: {str(exc) or type(exc).__name__}") from None
    return space


_PARAM_TYPES = {"int": IntParam, "float": FloatParam, "categorical": CategoricalParam}


def _describe(error: dict) -> str:
    raw = [str(part) for part in error["loc"]]
    loc = [part for part in raw if part not in _PARAM_TYPES]
    message = error["msg"].removeprefix("Value error, ").replace("Tuple should", "The list should")
    if len(raw) > 2 and raw[-3] == "choices":  # a choice that is none of the union's members
        loc, message = loc[:-1], "a choice must be a boolean, an integer, a number or a string"
    where = ".".join(loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        owner = (Space if len(raw) == 1 else Objective if raw[0] == "objectives"
                 else _PARAM_TYPES.get(raw[2] if len(raw) > 2 else "", Space))
        message = f"unknown key; allowed: {', '.join(owner.model_fields)}"
    elif error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        message = "type must be one of int, float, categorical"
    return f"{where}: {message}"


def _check_fixed_values(path: Path, space: Space) -> None:
    """Fixed values must be valid TrialSpec values (checked with a neutral sample of the parameters)."""
    for name, value in space.fixed.items():
        try:
            TrialSpec(**space.absolute({"framework": space.frameworks[0], "dataset": space.dataset,
                                        "optimizer": space.optimizers()[0],
                                        name: tuple(value) if isinstance(value, list) else value}))
        except ValidationError as exc:
            raise SpaceError(f"{path}: fixed.{name}: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _field_kind(name: str) -> str:
    """int, float or choice: what kind of value TrialSpec's field `name` holds."""
    if name == RELATIVE_LR:
        return "float"
    annotation = TrialSpec.model_fields[name].annotation
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    if typing.get_origin(annotation) is Literal or args[0] not in (int, float):
        return "choice"
    return "int" if args[0] is int else "float"


_ALLOWED_TYPES = {"int": ("int", "categorical"), "float": ("float", "int", "categorical"), "choice": ("categorical",)}


def _check_parameter_values(path: Path, space: Space) -> None:
    """Every value a parameter can take must be a valid TrialSpec value (beside the fixed ones) on every
    framework of the space: its type, low and high, each of its choices; then the combinations of those
    values (a framework's native API may refuse a pair, as torch's Nesterov does momentum 0)."""
    base = {k: tuple(v) if isinstance(v, list) else v for k, v in space.fixed.items()}
    if "optimizer" not in space.parameters:  # lr_decades alone needs the optimizer to be made an lr
        base.setdefault("optimizer", space.optimizers()[0])
    extremes = {}
    for name, param in space.parameters.items():
        allowed = _ALLOWED_TYPES[_field_kind(name)]
        if param.type not in allowed:
            raise SpaceError(f"{path}: parameters.{name}.type: {name} takes {_field_kind(name)} values; "
                             f"allowed types: {', '.join(allowed)}")
        values = ([(f"choices[{i}]", v) for i, v in enumerate(param.choices)] if param.type == "categorical"
                  else [("low", param.low), ("high", param.high)])
        for key, value in values:
            if isinstance(value, bool) and _field_kind(name) != "choice":
                raise SpaceError(f"{path}: parameters.{name}.{key}: {value} is not a number")
            for framework in space.frameworks:
                try:
                    for optimizer in (space.optimizers() if name == RELATIVE_LR else (None,)):
                        chosen = {**base, name: value, **({"optimizer": optimizer} if optimizer else {})}
                        TrialSpec(**space.absolute({"framework": framework, "dataset": space.dataset, **chosen}))
                except ValidationError as exc:
                    message = exc.errors()[0]["msg"].removeprefix("Value error, ")
                    raise SpaceError(f"{path}: parameters.{name}.{key}: {message}") from None
        extremes[name] = [value for _, value in values]
    _check_combinations(path, space, base, extremes)


def _check_combinations(path: Path, space: Space, base: dict, extremes: dict, limit: int = 4096) -> None:
    """Each framework with every combination of the parameters' choices and bounds (up to `limit`)."""

    names = list(extremes)
    if len(names) < 2 or len(space.frameworks) * math.prod(len(v) for v in extremes.values()) > limit:
        return
    for framework in space.frameworks:
        for values in itertools.product(*extremes.values()):
            try:
                TrialSpec(**space.absolute({"framework": framework, "dataset": space.dataset, **base,
                                            **dict(zip(names, values))}))
            except ValidationError as exc:
                message = exc.errors()[0]["msg"].removeprefix("Value error, ")
                combination = ", ".join(f"{n}={v}" for n, v in zip(names, values))
                raise SpaceError(f"{path}: parameters ({combination}): {message}") from None
