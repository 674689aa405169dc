"""The seeds' experiments as presets (`sensitivity reproduce liu2018|dlbench`): which defaults run on which
frameworks and datasets, how many seeds, and, for a rehearsal at `scale` < 1, which offline set stands in for
an official one whose files are absent.

- liu2018 (Liu et al. 2018): TensorFlow's, Caffe's and Torch's own defaults for MNIST and CIFAR-10, each at
  its published budget, on its home framework and on the others (Caffe, which cannot be installed here, on
  each of them), every one on both datasets, 5 seeds a cell. Each framework's two defaults on both datasets
  make a crossover (dataset transfer); the models are kept for `robustness`.
- dlbench (DLBench 2021): its one shared setting on the six frameworks, on MNIST (15 epochs), CIFAR-10 (100),
  CIFAR-100 (200) and SVHN (100), 3 runs each, on CPU and, where the cluster has GPUs, on GPU too.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from sensitivity import datasets
from sensitivity.config.defaults import Cut, load_table
from sensitivity.sweep.plans import default_plan

STAND_INS = {"mnist": "mnist5k"}  # an offline set drawn from the official one, for a rehearsal


@dataclass(frozen=True)
class Preset:
    name: str
    frameworks: tuple
    defaults: tuple
    datasets: tuple
    seeds: int
    crossovers: tuple = ()  # (framework, default tuned for datasets[0], default tuned for datasets[1])
    robustness: bool = False
    gpu: bool = False  # runs on GPU too where the cluster has GPUs


PRESETS = {
    "liu2018": Preset(
        "liu2018", ("tensorflow", "torch"),
        ("tensorflow-mnist-deep", "caffe-lenet", "torch-train-on-mnist", "tensorflow-cifar10", "caffe-cifar10-quick",
         "torch-train-on-cifar10"), ("mnist", "cifar10"), 5,
        crossovers=(("tensorflow", "tensorflow-mnist-deep", "tensorflow-cifar10"),
                    ("torch", "torch-train-on-mnist", "torch-train-on-cifar10"),
                    ("tensorflow", "caffe-lenet", "caffe-cifar10-quick"),
                    ("torch", "caffe-lenet", "caffe-cifar10-quick")), robustness=True),
    "dlbench": Preset("dlbench", ("tensorflow", "mxnet", "torch", "theano", "chainer", "keras"), ("dlbench-shared",),
                      ("mnist", "cifar10", "cifar100", "svhn"), 3, gpu=True),
}


class ReproduceError(ValueError):
    """A preset that cannot run as asked; one line naming what is missing and how to get it."""


@dataclass(frozen=True)
class Placement:
    """Where a preset's dataset runs: itself, its stand-in (a rehearsal), or nowhere (files absent)."""
    official: str
    runs_on: str = ""  # the dataset that runs; "" where none does

    @property
    def status(self) -> str:
        if not self.runs_on:
            return "not run: files absent"
        return "run" if self.runs_on == self.official else f"run on {self.runs_on} (stand-in)"


def check_scale(scale) -> float:
    if scale is None:
        return 1.0
    if not 0 < scale <= 1:
        raise ReproduceError(f"--scale {scale:g}: allowed 0 < F <= 1 (every budget's epochs times F)")
    return float(scale)


def placements(preset: Preset, scale: float, dry_run: bool) -> list:
    """Each dataset's placement. At the full scale a missing official set is refused (a dry run forecasts it
    from its official size instead); a rehearsal runs a stand-in where one exists."""
    found = []
    for name in preset.datasets:
        if datasets.is_present(name):
            found.append(Placement(name, name))
        elif scale < 1 and name in STAND_INS:
            found.append(Placement(name, STAND_INS[name]))
        elif scale < 1 or dry_run:
            found.append(Placement(name))
        else:
            raise ReproduceError(f"dataset {name}: its official files are not in {datasets.resolve_data_dir()}: "
                                 f"sensitivity datasets download {name} --data-dir DIR, then --data-dir DIR (or "
                                 "--scale F < 1 for a rehearsal without it)")
    return found


def plan(preset: Preset, placed: list, frameworks: list, seeds: int, scale: float, space) -> tuple:
    """(planned trials of the datasets that run, planned trials of those whose files are absent: forecast only).
    Every default on every framework and dataset at its published budget times `scale`; the trials of each
    crossover carry its marks; each records its per-sample correctness."""

    cut = Cut(fraction=scale) if scale < 1 else None
    names = list(preset.defaults)
    running = [p.runs_on for p in placed if p.runs_on]
    planned = default_plan(space, frameworks, running, seeds, cut, transfer=True, names=names,
                           record_correct=True) if running else []
    absent = [p.official for p in placed if not p.runs_on]
    forecast_only = default_plan(space, frameworks, absent, seeds, cut, transfer=True, names=names) if absent else []
    if len(running) == 2:
        planned = [_marked(t, preset, running) for t in planned]
    return planned, forecast_only


def _marked(trial, preset: Preset, running: list):
    """A transfer trial that is also a cell of one of the preset's crossovers, marked as `crossover` marks it."""
    a, b = running
    entry = trial.attrs.get("default")
    framework, regime = trial.planned["framework"], trial.planned.get("semantics", "native")
    for home, tuned_a, tuned_b in preset.crossovers:
        if framework != home or entry not in (tuned_a, tuned_b):
            continue
        source = "Caffe's" if entry.startswith("caffe") else f"{framework}'s"
        name = f"{framework}/{regime}: {a} x {b} ({source} defaults)"
        tuned_for = a if entry == tuned_a else b
        config = next(e for e in load_table() if e.name == entry).config
        attrs = {"crossover": name, "placebo": False, "tuned_for": tuned_for, "tuned_config": f"default {entry}",
                 "tuned_key": json.dumps(config, sort_keys=True)}
        return replace(trial, attrs={**trial.attrs, **attrs})
    return trial
