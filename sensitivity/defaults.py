"""The defaults table (search_spaces/defaults.yaml): each framework's published default configuration.

Caffe's entries name their solver files (`caffe_files`, relative to search_spaces/) instead of holding a
`config`: the configuration is what `import-caffe` reads from them, so the files are the one source.
A default moves between datasets and frameworks, not its original network: `trial_fields` gives the
TrialSpec fields of an entry on any dataset (the dataset's own model), optionally with its iterations
scaled to a budget of epochs for a quick run; the scaling is returned so results can say so.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from sensitivity import envs
from sensitivity.spec import TrialSpec

TABLE = envs.REPO_ROOT / "search_spaces" / "defaults.yaml"


class DefaultsError(ValueError):
    """A table entry that cannot be used; names the file, the entry and the field."""


@dataclass(frozen=True)
class DefaultEntry:
    name: str
    framework: str  # where the default comes from
    runs_on: str  # the framework that runs it as its own default, or "all"
    dataset: str  # the dataset it was tuned for
    config: dict
    source: dict
    original_model: str
    notes: tuple = ()

    def own_frameworks(self, available: list) -> list:
        """The frameworks for which this is their own default."""
        return list(available) if self.runs_on == "all" else [f for f in available if f == self.runs_on]


def load_table(path: Optional[Path] = None) -> list:
    from sensitivity.configs import read_mapping
    path = Path(path or TABLE)
    data = read_mapping(path, DefaultsError)
    entries = []
    for i, raw in enumerate(data.get("defaults", [])):
        name = raw.get("name", f"#{i}")
        config, notes = raw.get("config"), list(raw.get("notes", ()))
        if ("caffe_files" in raw) == (config is not None):
            raise DefaultsError(f"{path}: {name}: give either config or caffe_files")
        if config is None:
            config, not_reproduced = caffe_config(path.parent, raw["caffe_files"], f"{path}: {name}.caffe_files")
            notes += not_reproduced
        unknown = set(config) - set(TrialSpec.model_fields)
        if unknown:
            raise DefaultsError(f"{path}: {name}.config.{sorted(unknown)[0]}: unknown field")
        entries.append(DefaultEntry(name=name, framework=raw["framework"], runs_on=raw["runs_on"],
                                    dataset=raw["dataset"], config=dict(config), source=raw["source"],
                                    original_model=raw.get("original_model", ""), notes=tuple(notes)))
    return entries


def caffe_config(folder: Path, files: list, where: str) -> tuple:
    """(configuration, what is not reproduced) of Caffe solvers run one after another, as import-caffe reads
    them; the network is left out (a default moves between datasets, not its network)."""
    from sensitivity.caffe_import import CaffeImportError, import_phases, table_entry

    try:
        entry = table_entry(import_phases([folder / file for file in files]), "", "")
    except CaffeImportError as exc:
        raise DefaultsError(f"{where}: {exc}") from None
    return entry["config"], entry["notes"]


def trial_fields(entry: DefaultEntry, steps_per_epoch: int, budget_epochs: Optional[int] = None) -> tuple:
    """(TrialSpec fields of the entry's configuration, scale applied to its schedule or None).

    With a budget, the run is cut to `budget_epochs` epochs and the schedule is compressed with it:
    step values and step sizes scale by the same factor, inv's and exp's gamma so that the rate at the
    end of the shortened run equals the original's at its end.
    """
    fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in entry.config.items()}
    if not budget_epochs:
        return fields, None
    original_steps = fields.get("iterations") or fields.get("epochs", 5) * steps_per_epoch
    scale = budget_epochs * steps_per_epoch / original_steps
    if scale >= 1.0:
        return fields, None  # already within the budget
    fields.pop("iterations", None)
    fields["epochs"] = budget_epochs
    if "stepvalues" in fields:
        fields["stepvalues"] = tuple(sorted({max(1, round(v * scale)) for v in fields["stepvalues"]}))
    if "stepsize" in fields:
        fields["stepsize"] = max(1, round(fields["stepsize"] * scale))
    policy = fields.get("lr_policy", "fixed")
    if policy == "inv" and "gamma" in fields:
        fields["gamma"] = fields["gamma"] / scale
    elif policy == "exp" and "gamma" in fields:
        fields["gamma"] = fields["gamma"] ** (1.0 / scale)
    return fields, scale
