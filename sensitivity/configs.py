"""Configuration files: one trial's settings in YAML, as `import-caffe` writes them and the defaults
table holds them. Either a defaults-table entry (its settings under `config:`) or a flat mapping of
TrialSpec fields; unknown keys are errors naming the file, the key path and what is allowed.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from sensitivity.spec import TrialSpec

ENTRY_KEYS = {"name", "framework", "runs_on", "dataset", "source", "config", "original_model", "caffe_files", "ignored",
              "not_reproduced", "note", "notes"}


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file and the key path."""


def read_mapping(path, error=None) -> dict:
    """A YAML file's top-level mapping; raises `error` (ConfigError by default) with one line naming the file."""
    error = error or ConfigError
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise error(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return data


def load_config(path) -> dict:
    """The TrialSpec fields a configuration file sets."""
    path = Path(path)
    data = read_mapping(path)
    if "config" in data:
        unknown = sorted(set(data) - ENTRY_KEYS)
        if unknown:
            raise ConfigError(f"{path}: {unknown[0]}: unknown key; allowed: {', '.join(sorted(ENTRY_KEYS))}")
        fields, prefix = dict(data["config"] or {}), "config."
        if data.get("framework") not in (None, "caffe"):  # Caffe's configurations run on other frameworks
            fields.setdefault("framework", data["framework"])
        if data.get("dataset"):
            fields.setdefault("dataset", data["dataset"])
    else:
        fields, prefix = data, ""
    allowed = set(TrialSpec.model_fields)
    for key in fields:
        if key not in allowed:
            raise ConfigError(f"{path}: {prefix}{key}: unknown field; allowed: {', '.join(sorted(allowed))}")
    if "layers" in fields:
        fields["layers"] = tuple(fields["layers"])
    if "stepvalues" in fields:
        fields["stepvalues"] = tuple(fields["stepvalues"])
    return fields


def dump_config(entry: dict) -> str:
    return yaml.safe_dump(entry, sort_keys=False, default_flow_style=False, width=110)
