"""The typed results of the figures: one NamedTuple per kind of `plots.KINDS` (besides `frontier.Frontier` and
`findings.Findings`), with its fields named and documented, and the compute that returns it (`<kind>_data`).

Each compute runs the analysis function of its kind (`importance.parameter_importance`,
`seeds.seed_intervals`, ...; the report, the findings and the summary read those frames too) with the same
options, and moves what its figure read from the frame's `attrs` or from module tables into fields. A figure
draws only from its result, and `sensitivity export STUDY --figure KIND` writes the same fields
(`figure_data`), so any figure can be drawn again elsewhere.
"""
from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from sensitivity.analysis.tables.ablation import ablation_path
from sensitivity.analysis.tables.curves import CURVE_FIELDS, contour_grid, curve_metric, learning_curves, slice_points
from sensitivity.analysis.tables.divergence import divergence_rates
from sensitivity.analysis.rankings.importance import EVALUATORS, RESAMPLES, parameter_importance
from sensitivity.analysis.intervals import CONFIDENCE
from sensitivity.analysis.tables.isolation import isolation
from sensitivity.analysis.tables.resources import UNITS, resource_use
from sensitivity.analysis.tables.robustness import robustness_curves
from sensitivity.analysis.tables.seeds import METRICS, seed_intervals
from sensitivity.analysis.table import BY_FRAMEWORK
from sensitivity.analysis.tables.transfer import budget_note, transfer_matrix


class Importance(NamedTuple):
    """Fields:
    - rows: one row per block (`semantics`: each regime, then "all"), evaluator and parameter: importance (sums to 1
      per block and evaluator), low, high (its 95% bootstrap interval), rank (1 = most important), n_trials (sampled
      trials used), defaults (the framework defaults' values of the parameter, text)
    - agreement: one row per block of 3+ parameters: semantics, n_parameters, spearman, kendall
    - warnings: ((block, sentence), ...): where the ranking cannot be trusted
    - missing: {block: why it has no importance}
    - planned: planned trials (framework defaults) left out of the importance
    - subsample: {block: [n used, n sampled trials]} where a block had more than importance.SUBSAMPLE_MAX
    - verdicts: {block: {evaluator: {settled, top, second, lead, resamples, why}}}: whether each evaluator's ranking
      is settled (importance.ranking_verdict)
    """
    rows: pd.DataFrame
    agreement: pd.DataFrame
    warnings: tuple
    missing: dict
    planned: int
    subsample: dict
    verdicts: dict

    @classmethod
    def of(cls, frame: pd.DataFrame) -> "Importance":
        """The result of a frame of `parameter_importance` (its attrs made fields)."""
        attrs = frame.attrs
        return cls(frame, pd.DataFrame(attrs.get("agreement") or []),
                   tuple(tuple(w) for w in attrs.get("warnings") or ()), dict(attrs.get("missing") or {}),
                   int(attrs.get("planned", 0)), dict(attrs.get("subsample") or {}), dict(attrs.get("verdicts") or {}))


class Isolation(NamedTuple):
    """Fields:
    - rows: one row per parameter, bin (`value`: its label; `order`, `centre`), framework and regime: best_accuracy
      (mean over seeds of the bin's best configuration, 0-1), n_configs, n_seeds and config_id of the best, nuisance
      (the best's other parameters, text), default_accuracy (the framework default's, where it falls in the bin;
      else NaN)
    """
    rows: pd.DataFrame


class Slice(NamedTuple):
    """Fields:
    - rows: one row per trained trial and parameter: parameter, value (the trial's value), scale (log, linear or
      category: the axis), accuracy (0-1), framework, semantics, number (the trial), outcome, is_default
    """
    rows: pd.DataFrame


class Contour(NamedTuple):
    """Fields:
    - rows: one row per cell of a binned grid, per pair of parameters and regime: x_parameter, y_parameter,
      semantics, x, y (bin centres, in the parameters' units), accuracy (mean, 0-1), n_trials, x_scale, y_scale (log
      or linear); rows with is_default True are the framework defaults' own trials (framework named), drawn as
      marks, not cells
    """
    rows: pd.DataFrame


class Curves(NamedTuple):
    """Fields:
    - rows: one row per trial and epoch (ok, diverged and pruned trials): number, framework, semantics, config_id,
      seed, outcome, is_default, epoch, then the curve fields asked (train_loss, val_accuracy, test_accuracy,
      seconds)
    - metric: the accuracy drawn: val_accuracy where recorded, else test_accuracy
    """
    rows: pd.DataFrame
    metric: str


class Seeds(NamedTuple):
    """Fields:
    - rows: one row per framework, regime and configuration: config_id, n_seeds, dataset, the parameters (param_*),
      configuration (its label), is_default, and per metric <metric>_mean, _low, _high (the interval; the range for
      2 seeds, empty for 1), _n (seeds with a value), _method (t, range, single); then confidence
    - confidence: of the intervals (0.95: 95%)
    """
    rows: pd.DataFrame
    confidence: float

    @classmethod
    def of(cls, intervals: pd.DataFrame) -> "Seeds":
        """The result of a frame of `seed_intervals`."""
        return cls(intervals, float(intervals["confidence"].iloc[0]))


class Resources(NamedTuple):
    """Fields:
    - rows: one row per framework, regime and subset ("all trials", then "framework defaults"): n_trials, n_seeds
      and the median of each resource recorded (a column per key of `units`)
    - units: {resource column: its unit}, for the resources present (train_time_s: "s", peak_rss_mb: "MB", ...)
    """
    rows: pd.DataFrame
    units: dict

    @classmethod
    def of(cls, usage: pd.DataFrame) -> "Resources":
        """The result of a frame of `resource_use`."""
        return cls(usage, {m: unit for m, unit in UNITS.items() if m in usage})


class Divergence(NamedTuple):
    """Fields:
    - rows: one row per parameter, bin (`value`: its label; `order`, `centre`), framework and regime: n_trials,
      n_seeds, n_ok, n_diverged, n_failed, divergence_rate (diverged / n_trials, 0-1), failure_rate, n_defaults
      (framework defaults in the bin)
    """
    rows: pd.DataFrame


class Transfer(NamedTuple):
    """Fields:
    - rows: one row per default, target framework, target dataset and regime: accuracy (mean test accuracy over
      converged runs, 0-1), its interval, train_time_s, n_seeds, diverged, budget_scale, own_accuracy (the target's
      own default), relative_accuracy and relative_time (to it), source_framework (the default's home)
    - budget: " (budget cut: each default ran 0.04 to 0.5 of its published epochs)" where cut; else
    """""
    rows: pd.DataFrame
    budget: str

    @classmethod
    def of(cls, cells: pd.DataFrame) -> "Transfer":
        """The result of a frame of `transfer_matrix`."""
        return cls(cells, budget_note(cells["budget_scale"]) if "budget_scale" in cells else "")


class Robustness(NamedTuple):
    """Fields:
    - rows: one row per regime, dataset, default, role, attack, kind (white-box or transfer), source and target
      framework and eps (L-infinity, in the data's [0, 1] range): accuracy_mean, _low, _high, _method, n (models),
      clean_mean (their clean accuracy), relative_mean, _low, _high (accuracy / clean accuracy), samples (test
      samples a model)
    """
    rows: pd.DataFrame


class Ablation(NamedTuple):
    """Fields:
    - rows: one row per step of the path: step, change, framework, setting, n (trials), and per metric
      (val_accuracy, accuracy, train_time_s in s) its _mean, _low, _high (95% interval), _method; delta (the change
      of mean validation accuracy from the step before)
    - source: the configuration the path starts from
    - target: the configuration it walks to
    - inert: the knobs with no effect here, not walked
    - seeds: seeds per step
    """
    rows: pd.DataFrame
    source: str
    target: str
    inert: tuple
    seeds: int

    @classmethod
    def of(cls, frame: pd.DataFrame) -> "Ablation":
        """The result of a frame of `ablation_path` (its attrs made fields)."""
        attrs = frame.attrs
        return cls(frame, attrs.get("source"), attrs.get("target"), tuple(attrs.get("inert") or ()),
                   attrs.get("seeds"))


def importance_data(table, evaluators=EVALUATORS, seed: int = 0, resamples: int = RESAMPLES) -> Importance:
    return Importance.of(parameter_importance(table, evaluators, seed, resamples))


def isolation_data(table, parameters=None, bins: int = 5) -> Isolation:
    return Isolation(isolation(table, parameters, bins))


def slice_data(table, parameters=None) -> Slice:
    return Slice(slice_points(table, parameters))


def contour_data(table, parameters=None, bins: int = 10, max_parameters: int = 3) -> Contour:
    return Contour(contour_grid(table, parameters, bins, max_parameters))


def curves_data(table, fields=CURVE_FIELDS) -> Curves:
    rows = learning_curves(table, fields)
    return Curves(rows, curve_metric(rows))


def seeds_data(table, metrics=METRICS, confidence: float = CONFIDENCE) -> Seeds:
    return Seeds.of(seed_intervals(table, metrics, confidence))


def resources_data(table, keys=BY_FRAMEWORK, with_defaults: bool = True) -> Resources:
    return Resources.of(resource_use(table, keys, with_defaults))


def divergence_data(table, parameters=None, bins: int = 5) -> Divergence:
    return Divergence(divergence_rates(table, parameters, bins))


def transfer_data(table) -> Transfer:
    return Transfer.of(transfer_matrix(table))


def robustness_data(table, confidence: float = CONFIDENCE) -> Robustness:
    return Robustness(robustness_curves(table, confidence))


def ablation_data(table) -> Ablation:
    return Ablation.of(ablation_path(table))
