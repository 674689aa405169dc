"""The defaults table (search_spaces/defaults.yaml): each framework's published default, budget included.

An entry is either a framework's own `default` (tuned by its authors for `dataset`) or a `shared` setting
(DLBench's: one configuration for every framework, with a budget per dataset, tuned for none of them). Caffe's
entries name their solver files (`caffe_files`, relative to search_spaces/) instead of a `config`: the
configuration is what `import-caffe` reads from them, so the files are the one source. Every entry says
what it was checked against (`checked_against`: repository, commit, file, and each number's line verbatim),
and `load_table` parses each quoted number back out of its line (`check_quotes`): a table whose numbers are
not its sources' is refused.

The budget is part of a default. A budget published in steps belongs to the dataset it was published for,
so every budget is held in epochs of that dataset (published epochs: steps x batch / the `train_size` its
source script trained on), and the schedule likewise (step sizes, step values, inv's and exp's gamma), so
that on any dataset a default runs the same passes with the same shape of schedule. `trial_fields` gives the
TrialSpec fields of an entry on a dataset, at its published budget or cut (`Cut`) for a quick look, and the
`Scale` it ran at: the fraction of published epochs, and of published samples seen.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sensitivity.config.caffe_import import CaffeImportError, import_phases, table_entry
from sensitivity.config.files import read_mapping
from sensitivity.core import envs
from sensitivity.core.budgets import BUDGETS
from sensitivity.core.spec import TrialSpec
from sensitivity.datasets.registry import OFFICIAL_TRAIN_SIZE

TABLE = envs.REPO_ROOT / "search_spaces" / "defaults.yaml"
FAMILY = {"mnist5k": "mnist", "mnist5k-a": "mnist", "mnist5k-b": "mnist", "digits-a": "digits",
          "digits-b": "digits"}  # a set drawn from another
HALVES = ({"digits-a", "digits-b"}, {"mnist5k-a", "mnist5k-b"})  # two disjoint halves of one set: a placebo
SCHEDULE_IN_STEPS = ("stepsize", "stepvalues", "iterations")


def family(dataset: str) -> str:
    """The dataset a set is drawn from (mnist5k: mnist): a default tuned on the origin was tuned for it."""
    return FAMILY.get(dataset, dataset)


class DefaultsError(ValueError):
    """A table entry that cannot be used; names the file, the entry and the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Quote(_Strict):
    field: str
    quote: str = Field(min_length=1)


class Checked(_Strict):
    """Where an entry's numbers were read: a file at a commit, each number's line quoted verbatim."""
    repository: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    file: str
    lines: tuple[Quote, ...] = Field(min_length=1, strict=False)
    also: tuple["Checked", ...] = Field((), strict=False)


class Source(_Strict):
    project: str
    example: str
    file: str
    net: Optional[str] = None  # a Caffe solver's net file


class ScheduleEpochs(_Strict):
    """What a source gives in epochs (MXNet's lr_step_epochs, TensorFlow's NUM_EPOCHS_PER_DECAY)."""
    stepvalues: Optional[tuple[float, ...]] = Field(None, strict=False)
    stepsize: Optional[float] = Field(None, gt=0)


class DefaultEntry(_Strict):
    name: str
    kind: Literal["default", "shared"] = "default"
    framework: str  # where the default comes from
    runs_on: str  # the framework that runs it as its own default, or "all"
    dataset: str  # the dataset it was tuned for (a shared setting: the first of its budget's)
    source: Source
    config: dict = Field(strict=False)  # TrialSpec fields, the schedule in steps of `train_size`
    train_size: Optional[int] = Field(None, gt=0)  # the training samples per epoch of its source script
    schedule_epochs: Optional[ScheduleEpochs] = None  # a schedule its source gives in epochs
    budget_epochs: Optional[dict[str, float]] = Field(None, strict=False)  # shared: epochs per dataset
    checked_against: Optional[Checked] = None
    original_model: str = ""
    notes: tuple[str, ...] = Field((), strict=False)

    @field_validator("config")
    @classmethod
    def _known_fields(cls, config: dict) -> dict:
        unknown = sorted(set(config) - set(TrialSpec.model_fields))
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown field")
        return config

    @model_validator(mode="after")
    def _budget_given(self) -> "DefaultEntry":
        steps = [k for k in ("iterations", "epochs") if k in self.config]
        if self.kind == "shared":
            if steps or not self.budget_epochs:
                raise ValueError("a shared setting gives its budget as budget_epochs per dataset, not in config")
        elif len(steps) != 1:
            raise ValueError("config: give the published budget as iterations or as epochs (one of them)")
        in_steps = [k for k in SCHEDULE_IN_STEPS if k in self.config]
        in_steps = [k for k in in_steps if getattr(self.schedule_epochs, k, None) is None]
        if self.kind == "default" and in_steps and not self.train_size:
            raise ValueError(f"config.{in_steps[0]} is counted in steps: give train_size, the training samples "
                             "per epoch of its source script")
        return self

    def own_frameworks(self, available: list) -> list:
        """The frameworks for which this is their own default (a shared setting is nobody's)."""
        if self.kind == "shared":
            return []
        return list(available) if self.runs_on == "all" else [f for f in available if f == self.runs_on]

    def published_epochs(self, dataset: str) -> Optional[float]:
        """Its published budget in epochs (of the dataset it was published for); a shared setting's is the one
        it gives for `dataset`'s family, None where it gives none."""
        if self.kind == "shared":
            return self.budget_epochs.get(family(dataset))
        if "epochs" in self.config:
            return float(self.config["epochs"])
        return self.config["iterations"] * self.config.get("batch_size", 64) / self.train_size

    def published_steps(self, dataset: str) -> Optional[float]:
        """Its published budget in optimizer steps (of its batch on the dataset it was published for): the
        iterations it gives, else published samples / batch (Torch's 20 epochs of 60,000 at batch 10: 120,000)."""
        if "iterations" in self.config:
            return float(self.config["iterations"])
        samples = self.published_samples(dataset)
        return None if samples is None else samples / self.config.get("batch_size", 64)

    def published_samples(self, dataset: str) -> Optional[float]:
        """Training samples its published run saw: published epochs x the training set it ran on."""
        epochs = self.published_epochs(dataset)
        size = self.train_size or OFFICIAL_TRAIN_SIZE.get(family(dataset) if self.kind == "shared" else self.dataset)
        return None if epochs is None or size is None else epochs * size


@dataclass(frozen=True)
class Cut:
    """A budget below the published one, for a quick look: `epochs` of the target dataset, or a `fraction` of
    the published epochs. Never above the published budget."""
    epochs: Optional[float] = None
    fraction: Optional[float] = None


@dataclass(frozen=True)
class Scale:
    """What budget a default ran at on a dataset."""
    published_epochs: float  # its published budget, in epochs
    epochs: float  # the epochs it ran here (steps / steps per epoch)
    budget_scale: float  # epochs / published epochs: 1.0 at the published budget
    samples_scale: Optional[float]  # samples seen here / samples seen in the published run
    budget: str = "epochs"  # the definition of the published budget it ran (BUDGETS)

    def attrs(self) -> dict:
        return {"budget": self.budget, "budget_scale": round(self.budget_scale, 6),
                "published_epochs": round(self.published_epochs, 4),
                "run_epochs": round(self.epochs, 4),
                **({"samples_scale": round(self.samples_scale, 6)} if self.samples_scale is not None else {})}


def load_table(path: Optional[Path] = None) -> list:
    path = Path(path or TABLE)
    data = read_mapping(path, DefaultsError)
    raw_entries = data.get("defaults")
    if not isinstance(raw_entries, list):
        raise DefaultsError(f"{path}: defaults: expected a list of entries")
    entries = []
    for i, raw in enumerate(raw_entries):
        if not isinstance(raw, dict):
            raise DefaultsError(f"{path}: defaults[{i}]: expected a mapping")
        name = raw.get("name", f"#{i}")
        raw = dict(raw)
        if ("caffe_files" in raw) == ("config" in raw):
            raise DefaultsError(f"{path}: {name}: give either config or caffe_files")
        if "caffe_files" in raw:
            files = raw.pop("caffe_files")
            raw["config"], not_reproduced = caffe_config(path.parent, files, f"{path}: {name}.caffe_files")
            raw["notes"] = list(raw.get("notes", ())) + list(not_reproduced)
        try:
            entry = DefaultEntry.model_validate(raw)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise DefaultsError(f"{path}: {name}{'.' + where if where else ''}: {error['msg']}") from None
        check_quotes(entry, f"{path}: {name}")
        entries.append(entry)
    return entries


# ASCII digits only (re.ASCII): a source's "٠.٠١" or "５" is no number
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", re.ASCII)
# how a source words an optimizer or a learning-rate policy
WORDS = {"adam": r"adam", "sgd": r"sgd|gradientdescent|- learning_rate \* grad", "momentum": r"sgd|momentum",
         "inv": r'"inv"', "step": r"staircase", "fixed": r'"fixed"'}
CONTEXT = ("dropout", "moving_average")  # read from a source, part of its network, not of the configuration


def quoted_numbers(quote: str) -> list:
    """Every number written in a line: 1e-4, .05, 55,000, 350.0."""
    return [float(text.replace(",", "")) for text in NUMBER.findall(quote)]


def quoted_value(entry: DefaultEntry, field: str):
    """The entry's value of a field that its checked_against quotes: a number, a tuple of them, or a word."""
    config = entry.config
    if field.startswith("budget_epochs."):
        return (entry.budget_epochs or {}).get(field.split(".", 1)[1])
    if field == "train_size":
        return entry.train_size
    if field == "lr_decay":  # Torch's learningRateDecay: the inv policy's gamma, with power 1
        return config.get("gamma") if config.get("lr_policy") == "inv" and config.get("power") == 1.0 else None
    if field == "lr_then":  # the rate of Caffe's second solver
        return config["lr"] * config.get("gamma", 1.0)
    if field in ("lr_step_epochs", "epochs_per_decay"):
        schedule = entry.schedule_epochs
        return schedule and (schedule.stepvalues if field == "lr_step_epochs" else schedule.stepsize)
    if field in ("optimizer", "lr_policy"):
        return config.get(field, "fixed")
    if field in ("momentum", "weight_decay") and field not in config:
        return 0.0 if field == "weight_decay" or config.get("optimizer") in ("sgd", "adam") else None
    return config.get(field)


def check_quotes(entry: DefaultEntry, where: str) -> None:
    """Each number of the entry that a line of checked_against quotes is written in that line (the table's
    numbers are the sources' own); DefaultsError naming the field and the line otherwise."""
    checked = entry.checked_against
    records = [checked] if checked else []
    while records:
        record = records.pop()
        records.extend(record.also)
        for line in record.lines:
            if line.field in CONTEXT:
                continue
            value = quoted_value(entry, line.field)
            if isinstance(value, str):
                found = value in WORDS and re.search(WORDS[value], line.quote, re.IGNORECASE)
            elif value is None:
                found = False
            else:
                numbers = quoted_numbers(line.quote)
                found = all(any(math.isclose(v, n, rel_tol=1e-9) for n in numbers)
                            for v in (value if isinstance(value, (list, tuple)) else [value]))
            if not found:
                raise DefaultsError(f"{where}.checked_against: {line.field} {value!r} is not what its line says "
                                    f"({record.file}: {line.quote!r})")


def caffe_config(folder: Path, files: list, where: str) -> tuple:
    """(configuration, what is not reproduced) of Caffe solvers run one after another, as import-caffe reads
    them; the network is left out (a default moves between datasets, not its network)."""

    try:
        entry = table_entry(import_phases([folder / file for file in files]), "", "")
    except CaffeImportError as exc:
        raise DefaultsError(f"{where}: {exc}") from None
    return entry["config"], entry["notes"]


def trial_fields(entry: DefaultEntry, dataset: str, steps_per_epoch: int, cut: Optional[Cut] = None,
                 budget: str = "epochs") -> tuple:
    """(TrialSpec fields of the entry on `dataset`, Scale).

    `steps_per_epoch` is the target's (after its validation hold-out). `budget` is the definition of the
    published budget (BUDGETS): "epochs", its published epochs of the source dataset, or "steps", its published
    optimizer steps (on a smaller dataset, many more passes). The run is that budget (or `cut`'s share of it)
    as a whole number of steps, `iterations`; the schedule keeps its shape over the run: a step at published
    epoch e fires at the same share of the run here, inv's and exp's gamma give the same rate at the same share
    (at "steps", the source's own steps and gamma). DefaultsError where the entry has no budget for the dataset
    or the budget is below one step.
    """
    published = entry.published_epochs(dataset)
    if published is None:
        raise DefaultsError(f"{entry.name}: the shared setting gives no budget for {dataset} "
                            f"(it gives one for {', '.join(entry.budget_epochs)})")
    if budget not in BUDGETS:
        raise DefaultsError(f"{entry.name}: budget {budget!r}; allowed: {', '.join(BUDGETS)}")
    # the definition's budget in epochs of the target: the source's epochs, or its steps at this dataset's epoch
    full = published if budget == "epochs" else entry.published_steps(dataset) / steps_per_epoch
    epochs = full
    if cut is not None and cut.fraction is not None:
        epochs = full * cut.fraction
    elif cut is not None and cut.epochs is not None:
        epochs = min(full, cut.epochs)
    iterations = round(epochs * steps_per_epoch)
    if epochs * steps_per_epoch < 1:
        raise DefaultsError(f"{entry.name} on {dataset}: a budget of {epochs:.3g} epochs is below one step "
                            f"({steps_per_epoch} steps an epoch)")
    scale = epochs / published  # the schedule's stretch: epochs here per published epoch
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in entry.config.items() if k != "epochs"}
    fields["iterations"] = iterations
    # steps of the source per step here, over the same share of the run
    source_steps = (entry.train_size / entry.config.get("batch_size", 64)) if entry.train_size else None
    per_step = (source_steps / (steps_per_epoch * scale)) if source_steps else None
    in_epochs = {k: v for k, v in (entry.schedule_epochs.model_dump() if entry.schedule_epochs else {}).items()
                 if v is not None}
    if "stepvalues" in fields and "stepvalues" not in in_epochs:
        in_epochs["stepvalues"] = [v / source_steps for v in fields["stepvalues"]]
    if "stepsize" in fields and "stepsize" not in in_epochs:
        in_epochs["stepsize"] = fields["stepsize"] / source_steps
    if "stepvalues" in in_epochs:
        fields["stepvalues"] = _steps_at(in_epochs["stepvalues"], steps_per_epoch * scale)
    if "stepsize" in in_epochs:
        fields["stepsize"] = max(1, round(in_epochs["stepsize"] * steps_per_epoch * scale))
    policy = fields.get("lr_policy", "fixed")
    if policy == "inv" and per_step:
        fields["gamma"] = fields["gamma"] * per_step
    elif policy == "exp" and per_step:
        fields["gamma"] = fields["gamma"] ** per_step
    samples = entry.published_samples(dataset)
    seen = iterations * fields.get("batch_size", 64)
    return fields, Scale(published, iterations / steps_per_epoch, epochs / full, seen / samples if samples else None,
                         budget)


def _steps_at(epochs, steps_per_epoch: float) -> tuple:
    """The steps at which a schedule given in epochs fires: strictly increasing, from step 1."""
    return tuple(sorted({max(1, round(e * steps_per_epoch)) for e in epochs}))


def published_budget_text(entry: DefaultEntry, dataset: str) -> str:
    """"10.7 epochs of mnist (10,000 steps of 64 on 60,000)" for a report or a refusal."""
    epochs = entry.published_epochs(dataset)
    if epochs is None:
        return "no budget for this dataset"
    if "iterations" in entry.config:
        return (f"{epochs:.3g} epochs of {entry.dataset} ({entry.config['iterations']:,} steps of "
                f"{entry.config.get('batch_size', 64)} on {entry.train_size:,})")
    where = family(dataset) if entry.kind == "shared" else entry.dataset
    return f"{epochs:g} epochs of {where}"


def is_published(scale) -> bool:
    """Whether a run's budget_scale is the published budget (1, up to rounding a step)."""
    return scale is not None and scale == scale and math.isclose(float(scale), 1.0, abs_tol=1e-6)
