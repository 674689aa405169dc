"""Checks that a trial can run on its dataset, made on the driver before any worker starts.

The model must fit the dataset's input (every layer's output at least 1x1) and the batch must fit in the
training samples left after the validation split. Each failure names the option and the values that fit.
"""
from __future__ import annotations

import numpy as np

from sensitivity.core.models import MODELS, ModelSpec, get_model, layers_from_dicts
from sensitivity.core.spec import TrialSpec
from sensitivity.datasets import get_info
from sensitivity.datasets.base import split_validation


class FitError(ValueError):
    """The trial cannot run on this dataset; `option` is the command-line option to change."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


def layer_problem(model: ModelSpec, input_shape: tuple, classes: int):
    """None when `model` fits inputs of `input_shape`, else what goes wrong."""
    try:
        model.resolve(classes).shapes(input_shape)
    except ValueError as exc:
        return str(exc)
    return None


def models_that_fit(input_shape: tuple, classes: int) -> list[str]:
    return [name for name, model in MODELS.items() if layer_problem(model, input_shape, classes) is None]


def training_samples(y_train: np.ndarray, val_fraction: float, seed: int) -> int:
    """How many training samples remain once the validation split is held out."""
    return len(split_validation(np.empty(len(y_train)), y_train, val_fraction, seed)[1])


def check_fit(spec: TrialSpec, input_shape: tuple, classes: int, y_train: np.ndarray) -> None:
    """Raise FitError unless the spec's model and batch size fit a dataset of these inputs and labels."""
    if spec.layers:
        try:
            model, option = layers_from_dicts(spec.model or "inline", spec.layers), "--config"
        except ValueError as exc:
            raise FitError("--config", f"layers: {exc}") from None
    else:
        name = spec.model or _default_model(spec.dataset)
        model, option = get_model(name), "--model"
    problem = layer_problem(model, input_shape, classes)
    if problem:
        shape = "x".join(str(n) for n in input_shape)
        fits = ", ".join(models_that_fit(input_shape, classes)) or "none"
        what = "the configuration's layers" if option == "--config" else f"{option} {model.name}"
        raise FitError(option, f"{what} does not fit {spec.dataset} inputs of shape {shape} ({problem}); "
                               f"models that fit: {fits}")
    samples = training_samples(y_train, spec.val_fraction, spec.seed)
    if spec.batch_size > samples:
        held = f" after the --val-fraction {spec.val_fraction:g} split" if spec.val_fraction else ""
        raise FitError("--batch-size", f"--batch-size {spec.batch_size} exceeds the {samples} training samples "
                                       f"of {spec.dataset}{held}; allowed: 1 to {samples}")


def check_prepared(spec: TrialSpec, path) -> None:
    """check_fit against a prepared dataset (`datasets.prepare`), reading only its labels."""
    info = get_info(spec.dataset)
    with np.load(path, allow_pickle=False) as z:
        y_train = z["y_train"]
    check_fit(spec, info.input_shape, info.classes, y_train)


def _default_model(dataset: str) -> str:
    return get_info(dataset).default_model
