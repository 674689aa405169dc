"""The robustness protocol (search_spaces/robustness.yaml): the eps grid, the attacks, the transfer attacks'
surrogate, the clean-accuracy margin, the checks' thresholds and the bootstrap, fixed in a file before any model is attacked, and recorded
with the study (`record`: the values and the file's digest) so that no part of it is chosen from results.
A value outside its range is refused in one line naming the file, the field and what it allows.

The surrogate (`surrogate`: model, framework, epochs, optimizer, lr, batch_size) is the one source of the transfer
attacks: a model no compared framework trained, trained once per dataset and seed on the one framework named,
whose white-box examples every target of that seed meets."""
from __future__ import annotations

import hashlib
from pathlib import Path

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sensitivity import datasets, frameworks
from sensitivity.config.files import read_mapping
from sensitivity.core import envs
from sensitivity.core.attacks import ATTACKS
from sensitivity.core.spec import OPTIMIZERS

PROTOCOL = envs.REPO_ROOT / "search_spaces" / "robustness.yaml"


class ProtocolError(ValueError):
    """A protocol file that cannot be used: one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


GRID_ALLOWED = "an increasing list of radii in (0, 1], the data's [0, 1] range"


def _grid(values: tuple) -> tuple:
    shown = "[" + ", ".join(f"{e:g}" for e in values) + "]"
    if any(not 0 < e <= 1 for e in values):
        raise ValueError(f"{shown}: a radius outside [0, 1]; allowed: {GRID_ALLOWED}")
    if not values or list(values) != sorted(set(values)):
        raise ValueError(f"{shown}: not increasing; allowed: {GRID_ALLOWED}")
    return values


MLP128 = ({"type": "Flatten"}, {"type": "Dense", "units": 128}, {"type": "ReLU"}, {"type": "Dense", "units": 10})


class Surrogate(_Strict):
    """The transfer attacks' one source per dataset and seed (see the module); by default `mlp128`, one hidden
    layer of 128 units, unlike every default's model."""
    model: str = "mlp128"  # a model of sensitivity.core.models, or with `layers` the name of those layers
    layers: Optional[tuple[dict, ...]] = None
    framework: str = "torch"
    epochs: int = Field(10, gt=0, le=200)
    optimizer: str = "adam"
    lr: float = Field(0.001, gt=0, le=10)
    batch_size: int = Field(64, gt=0, le=4096)

    @model_validator(mode="before")
    @classmethod
    def _mlp128(cls, data):
        if isinstance(data, dict) and data.get("model", "mlp128") == "mlp128" and "layers" not in data:
            return {**data, "layers": MLP128}
        return data

    @model_validator(mode="after")
    def _model(self):
        # lazy: sensitivity.core.models (numpy)
        from sensitivity.core.models import MODELS, layers_from_dicts

        if self.layers is None and self.model not in MODELS:
            raise ValueError(f"model {self.model}: unknown model; allowed: {', '.join(MODELS)}, or any name "
                             "with its layers")
        if self.layers is not None:
            try:
                layers_from_dicts(self.model, self.layers)
            except (TypeError, ValueError, KeyError) as exc:
                raise ValueError(f"layers: {exc}; allowed: dicts of sensitivity.core.models layers") from None
        return self

    @field_validator("framework")
    @classmethod
    def _framework(cls, value):
        if value not in frameworks.FRAMEWORKS:
            raise ValueError(f"{value}: unknown framework; allowed: {', '.join(frameworks.FRAMEWORKS)}")
        return value

    @field_validator("optimizer")
    @classmethod
    def _optimizer(cls, value):
        if value not in OPTIMIZERS:
            raise ValueError(f"{value}: unknown optimizer; allowed: {', '.join(OPTIMIZERS)}")
        return value

    def describe(self) -> str:
        return f"one {self.model} per seed trained on {self.framework} ({self.epochs} epochs, {self.optimizer} lr {self.lr:g})"


class Checks(_Strict):
    pgd_slack: float = Field(0.02, ge=0, le=1)
    eps: float = Field(0.3, gt=0, le=1)  # the radius at which a working attack leaves at most `floor` accuracy
    floor: float = Field(0.1, ge=0, le=1)
    zero_gradient: float = Field(0.01, ge=0, le=1)


class Bootstrap(_Strict):
    resamples: int = Field(2000, ge=100, le=100_000)
    seed: int = Field(0, ge=0)


class Protocol(_Strict):
    eps: tuple[float, ...]
    eps_by_dataset: dict[str, tuple[float, ...]] = {}
    attacks: tuple[str, ...] = ATTACKS
    surrogate: Surrogate = Surrogate()
    clean_margin: float = Field(0.02, gt=0, lt=1)
    # the claim's family: pairs of frameworks whose own defaults it compares, registered before any attack
    primary: Optional[tuple[tuple[str, str], ...]] = None
    control_tolerance: float = Field(0.02, gt=0, lt=1)  # of robust AUC: the canonical check's, before any attack
    checks: Checks = Checks()
    bootstrap: Bootstrap = Bootstrap()

    @field_validator("eps")
    @classmethod
    def _eps(cls, values):
        return _grid(values)

    @field_validator("eps_by_dataset")
    @classmethod
    def _by_dataset(cls, grids):
        for name, values in grids.items():
            if name not in datasets.REGISTRY:
                raise ValueError(f"unknown dataset {name!r}; allowed: {', '.join(datasets.REGISTRY)}")
            try:
                _grid(values)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
        return grids

    @field_validator("primary")
    @classmethod
    def _primary(cls, pairs):
        for pair in pairs or ():
            unknown = [f for f in pair if f not in frameworks.FRAMEWORKS]
            if unknown or pair[0] == pair[1]:
                raise ValueError(f"{list(pair)}: allowed: pairs of two different frameworks of "
                                 f"{', '.join(frameworks.FRAMEWORKS)}")
        return pairs

    @field_validator("attacks")
    @classmethod
    def _attacks(cls, values):
        unknown = [a for a in values if a not in ATTACKS]
        if unknown or not values:
            raise ValueError(f"{','.join(unknown) or '(none)'}: allowed {', '.join(ATTACKS)}")
        return values

    def grid(self, dataset: str) -> tuple:
        """The radii attacked on `dataset`, with 0 (the clean accuracy) first."""
        return (0.0, *self.eps_by_dataset.get(dataset, self.eps))


def load(path=None) -> tuple:
    """(Protocol, its record for the study) of the file at `path` (default search_spaces/robustness.yaml)."""

    path = Path(path or PROTOCOL)
    data = read_mapping(path, ProtocolError)
    try:
        protocol = Protocol.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"{path}: {_message(exc.errors()[0])}") from None
    _installed(path, protocol.surrogate)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return protocol, {"file": str(path), "sha256": digest, **protocol.model_dump(mode="json")}


def _message(error: dict) -> str:
    """One validation error as "FIELD: reason; allowed: ...", the value shown where pydantic's reason is its own."""
    loc = [str(p) for p in error["loc"]]
    where = ".".join(loc) or "(top level)"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        owner = {"surrogate": Surrogate, "checks": Checks, "bootstrap": Bootstrap}.get(loc[0], Protocol)
        fields = owner.model_fields if len(loc) > 1 else Protocol.model_fields
        return f"{where}: unknown key; allowed: {', '.join(fields)}"
    if "allowed" in message:
        return f"{where}: {message}"
    shown = repr(error.get("input"))[:60]
    allowed = ALLOWED.get(where) or ALLOWED.get(loc[0] if loc else "") or "see search_spaces/robustness.yaml"
    return f"{where} {shown}: {message}; allowed: {allowed}"


ALLOWED = {"eps": GRID_ALLOWED, "eps_by_dataset": "a mapping of dataset names to such lists",
           "attacks": ", ".join(ATTACKS), "surrogate": "a mapping of " + ", ".join(Surrogate.model_fields),
           "surrogate.model": "a model name, or any name with its layers",
           "surrogate.layers": "a list of layer dicts (type: Flatten, Dense, ...)",
           "surrogate.framework": "a framework name (torch, tensorflow, ...)", "surrogate.epochs": "1 to 200",
           "surrogate.optimizer": "sgd, momentum, nesterov, adam, rmsprop", "surrogate.lr": "above 0, at most 10",
           "surrogate.batch_size": "1 to 4096", "clean_margin": "above 0 and below 1",
           "checks": "a mapping of pgd_slack, floor, zero_gradient, each in [0, 1], and eps in (0, 1]",
           "bootstrap": "a mapping of resamples (100 to 100,000) and seed (0 or above)"}


def _installed(path: Path, surrogate: Surrogate) -> None:
    """A ProtocolError where the surrogate's framework is not usable here."""
    version, usable, why = frameworks.probe(surrogate.framework)
    if not usable:
        usable_here = [n for n, info in frameworks.FRAMEWORKS.items() if envs.is_available(info.env)]
        raise ProtocolError(f"{path}: surrogate.framework {surrogate.framework}: not installed here"
                            f"{f' ({why})' if why else ''}; allowed: {', '.join(usable_here)}")
