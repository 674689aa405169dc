"""The trial contract: what a trial is asked to do (TrialSpec) and what it reports (TrialResult).

Every part of the program speaks these two types: the CLI builds a TrialSpec, the worker runs it in the
framework's environment and streams epoch events and then one TrialResult, the sweep stores results in
Optuna. Names are framework-neutral so a configuration can move between frameworks and datasets.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sensitivity.core import semantics

OPTIMIZERS = ("sgd", "momentum", "nesterov", "adam", "rmsprop")
LR_POLICIES = ("fixed", "step", "multistep", "inv", "exp", "cosine")
INITS = ("neutral", "framework")
SEMANTICS = ("native", "canonical")
STATUSES = ("ok", "diverged", "failed", "timeout", "pruned")
# Bounds of a trial (docs/bounds.md): far above any real run, low enough that no value overflows a
# framework, a timer or a seed.
MAX_BATCH_SIZE = 1_048_576
MAX_EPOCHS = 10_000
MAX_ITERATIONS = 100_000_000
MAX_STEPVALUES = 1_000
MAX_SEED = 2**31 - 1  # every framework's seed (MXNet's is a C int)
MAX_THREADS = 1_024
MAX_TIMEOUT_S = 30 * 24 * 3600.0  # 30 days


class TrialSpec(BaseModel):
    """One framework training one model on one dataset under one configuration.

    Learning-rate policies follow Caffe and are evaluated per optimizer step (`it` counts steps from 0):
    fixed: lr; step: lr*gamma^floor(it/stepsize); multistep: lr*gamma^(number of stepvalues <= it);
    inv: lr*(1+gamma*it)^-power; exp: lr*gamma^it; cosine: lr*(1+cos(pi*it/total_steps))/2.
    """

    # strict: no "2" for an integer, no 'yes' for a boolean, no 2.5 for an integer (an int is a float)
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)

    framework: str
    backend: Optional[str] = None  # for multi-backend frameworks (keras: tensorflow, jax, torch)
    dataset: str
    model: Optional[str] = None  # None: the dataset's default model
    # an inline ModelSpec (models.layers_from_dicts), e.g. from Caffe
    layers: Optional[tuple[dict, ...]] = Field(None, strict=False)
    batch_size: int = Field(64, gt=0, le=MAX_BATCH_SIZE)
    lr: float = Field(0.01, gt=0)
    epochs: int = Field(5, gt=0, le=MAX_EPOCHS)
    # total optimizer steps, as Caffe's max_iter; overrides epochs
    iterations: Optional[int] = Field(None, gt=0, le=MAX_ITERATIONS)
    optimizer: Literal[OPTIMIZERS] = "momentum"
    momentum: float = Field(0.9, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)  # lambda of the L2 term (lambda/2)|w|^2 added to the loss
    lr_policy: Literal[LR_POLICIES] = "fixed"
    gamma: float = Field(0.1, ge=0)
    power: float = Field(0.75, ge=0)
    stepsize: int = Field(1000, gt=0, le=MAX_ITERATIONS)
    stepvalues: tuple[int, ...] = Field((), strict=False, max_length=MAX_STEPVALUES)
    val_fraction: float = Field(0.0, ge=0, lt=1)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    semantics: Literal[SEMANTICS] = "native"  # the framework's own API, or the same formulas everywhere
    init: Optional[Literal[INITS]] = None  # neutral: numpy weights from the seed; framework: its own
    # initialiser; None: as the semantics (native: framework, canonical: neutral)
    knobs: Optional[dict[str, str]] = None  # per-knob sources (sensitivity.core.semantics.KNOBS), for ablation
    device: str = "cpu"  # cpu, gpu or gpu:N (checked against the machine where the trial is started)
    threads: int = Field(0, ge=0, le=MAX_THREADS)  # 0: every core this process may use
    timeout: Optional[float] = Field(None, gt=0, le=MAX_TIMEOUT_S)  # wall-clock seconds for the whole trial
    data_dir: Optional[str] = None
    keep_weights: Optional[str] = None  # path of an .npz to save the trained weights to
    keep_checkpoints: bool = False  # with keep_weights, each epoch's weights too (trial.loop.checkpoint_path)
    deterministic: bool = False  # each framework's deterministic-kernel flags (frameworks.gpu.DETERMINISM)
    record_correct: bool = False  # record which test samples the model gets right (sensitivity.core.correctness)
    # the cores the worker is pinned to while it trains (sensitivity timing); its own set is put back after
    pin_cpus: Optional[tuple[int, ...]] = Field(None, strict=False, min_length=1, max_length=MAX_THREADS)

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        if not re.fullmatch(r"cpu|gpu(:(0|[1-9][0-9]{0,3}))?", value):
            shown = repr(value) if len(value) <= 40 else f"of {len(value)} characters"
            raise ValueError(f"device {shown}: allowed cpu, gpu or gpu:N (N from 0 to 9999)")
        return value

    @model_validator(mode="after")
    def _check_stepvalues(self) -> "TrialSpec":
        if list(self.stepvalues) != sorted(set(self.stepvalues)) or any(v <= 0 for v in self.stepvalues):
            raise ValueError("stepvalues must be positive and strictly increasing")
        if self.lr_policy == "multistep" and not self.stepvalues:
            raise ValueError("lr_policy multistep needs stepvalues")
        unknown = set(self.knobs or {}) - set(semantics.KNOBS)
        if unknown:
            raise ValueError(f"knobs.{sorted(unknown)[0]}: unknown knob; allowed: {', '.join(semantics.KNOBS)}")
        semantics.check(self)
        return self

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> "TrialSpec":
        return cls.model_validate_json(text)


@dataclass
class EpochRecord:
    """One point of the learning curve."""

    epoch: int
    train_loss: float
    val_accuracy: Optional[float]
    test_accuracy: Optional[float]
    seconds: float  # training time of this epoch alone


@dataclass
class TrialResult:
    """What one trial reports: the score always with its cost, and an honest status.

    A diverged run keeps the accuracy of the model it left (chance level); failed and timeout runs carry
    no metrics at all, only the reason and the tail of stderr.
    """

    status: Literal[STATUSES]
    reason: str = ""
    spec: dict = field(default_factory=dict)
    accuracy: Optional[float] = None
    val_accuracy: Optional[float] = None
    loss: Optional[float] = None
    curve: list = field(default_factory=list)  # of EpochRecord as dicts
    setup_time_s: Optional[float] = None  # imports, data and model building
    compile_time_s: Optional[float] = None  # first-step compilation, where the framework compiles
    train_time_s: Optional[float] = None
    test_time_s: Optional[float] = None
    wall_time_s: Optional[float] = None  # the whole trial inside the worker, per-epoch evaluation included
    throughput: Optional[float] = None  # training samples per second
    peak_rss_mb: Optional[float] = None
    cpu_percent: Optional[float] = None
    gpu: Optional[dict] = None  # utilisation, memory and energy from NVML; None without a GPU or NVML
    gpu_error: Optional[str] = None  # why a trial on a GPU has no GPU figures (NVML missing, say)
    flops_per_s: Optional[float] = None
    params: Optional[int] = None
    steps: Optional[int] = None
    test_correct: Optional[str] = None  # per test sample, right or wrong, packed (spec.record_correct)
    stderr_tail: str = ""
    env: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), allow_nan=False, default=_jsonable)

    @classmethod
    def from_dict(cls, data: dict) -> "TrialResult":
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @classmethod
    def failure(cls, status: str, reason: str, spec: Optional[TrialSpec] = None, stderr_tail: str = "",
                env: Optional[dict] = None) -> "TrialResult":
        return cls(status=status, reason=reason, spec=spec.model_dump() if spec else {},
                   stderr_tail=stderr_tail, env=env or {})


def _jsonable(value):
    """numpy scalars and tuples in results become plain JSON values."""
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
