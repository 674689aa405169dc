"""The robustness protocol (search_spaces/robustness.yaml): the eps grid, the attacks, the clean-accuracy
margin, the checks' thresholds and the bootstrap, fixed in a file before any model is attacked, and recorded
with the study (`record`: the values and the file's digest) so that no part of it is chosen from results.
A value outside its range is refused in one line naming the file and the field."""
from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sensitivity import datasets
from sensitivity.config.files import read_mapping
from sensitivity.core import envs
from sensitivity.core.attacks import ATTACKS

PROTOCOL = envs.REPO_ROOT / "search_spaces" / "robustness.yaml"


class ProtocolError(ValueError):
    """A protocol file that cannot be used: one line naming the file and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _grid(values: tuple) -> tuple:
    if not values or any(not 0 < e <= 1 for e in values) or list(values) != sorted(set(values)):
        raise ValueError("an increasing list of radii in (0, 1], the data's [0, 1] range")
    return values


class Checks(_Strict):
    pgd_slack: float = Field(0.02, ge=0, le=1)
    floor: float = Field(0.1, ge=0, le=1)
    zero_gradient: float = Field(0.01, ge=0, le=1)


class Bootstrap(_Strict):
    resamples: int = Field(2000, ge=100, le=100_000)
    seed: int = Field(0, ge=0)


class Protocol(_Strict):
    eps: tuple[float, ...]
    eps_by_dataset: dict[str, tuple[float, ...]] = {}
    attacks: tuple[str, ...] = ATTACKS
    clean_margin: float = Field(0.02, gt=0, lt=1)
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
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown key; allowed: {', '.join(Protocol.model_fields)}"
        raise ProtocolError(f"{path}: {where}: {message}") from None
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return protocol, {"file": str(path), "sha256": digest, **protocol.model_dump(mode="json")}
