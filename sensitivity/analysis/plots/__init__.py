"""Every figure of the analysis: one thin `plot_<kind>` per kind, drawing what its compute function returned
(`study`: the figures of one study; `comparisons`: those across studies), and `KINDS`, the registry of
kind -> (compute, plot): a new figure is one line there. `write_figure` computes, draws and writes one figure
from a study or a trial table.
"""
from __future__ import annotations

import inspect
from pathlib import Path

from sensitivity.analysis import export
from sensitivity.analysis.ablation import ablation_path
from sensitivity.analysis.curves import contour_grid, learning_curves, slice_points
from sensitivity.analysis.divergence import divergence_rates
from sensitivity.analysis.findings import findings
from sensitivity.analysis.frontier import runtime_accuracy_frontier
from sensitivity.analysis.importance import parameter_importance
from sensitivity.analysis.isolation import isolation
from sensitivity.analysis.plots.comparisons import (plot_ablation, plot_crossover, plot_findings, plot_robustness,
                                                    plot_transfer)
from sensitivity.analysis.plots.study import (CURVES_MAX, POINTS_MAX, drawn, plot_contour, plot_curves,
                                              plot_divergence, plot_frontier, plot_importance, plot_isolation,
                                              plot_resources, plot_seeds, plot_slice)
from sensitivity.analysis.resources import resource_use
from sensitivity.analysis.robustness import robustness_curves
from sensitivity.analysis.seeds import seed_intervals
from sensitivity.analysis.table import UNFRAMED, NotEnoughData, trials_table, unframed
from sensitivity.analysis.transfer import transfer_matrix


__all__ = ["CURVES_MAX", "KINDS", "POINTS_MAX", "STUDY_KINDS", "drawn", "figure", "plot_ablation", "plot_contour",
           "plot_crossover", "plot_curves", "plot_divergence", "plot_findings", "plot_frontier", "plot_importance",
           "plot_isolation", "plot_resources", "plot_robustness", "plot_seeds", "plot_slice", "plot_transfer",
           "write_figure"]

KINDS = {
    "findings": (findings, plot_findings),
    "frontier": (runtime_accuracy_frontier, plot_frontier),
    "importance": (parameter_importance, plot_importance),
    "isolation": (isolation, plot_isolation),
    "slice": (slice_points, plot_slice),
    "contour": (contour_grid, plot_contour),
    "curves": (learning_curves, plot_curves),
    "seeds": (seed_intervals, plot_seeds),
    "resources": (resource_use, plot_resources),
    "divergence": (divergence_rates, plot_divergence),
    "transfer": (transfer_matrix, plot_transfer),
    "robustness": (robustness_curves, plot_robustness),
    "ablation": (ablation_path, plot_ablation),
}
# kinds drawn from any study; the others need its planned trials of defaults (sensitivity transfer), its
# trained models attacked (sensitivity robustness) or its ablation path (sensitivity ablate)
STUDY_KINDS = tuple(kind for kind in KINDS if kind not in ("transfer", "robustness", "ablation"))


def figure(study_or_frame, kind: str, **options):
    """The figure of `kind` for a study or a trial table; each option goes to the compute or the plot
    function that takes it (e.g. parameters=["lr"] and bins=8 for isolation, top=10 for seeds)."""
    if kind not in KINDS:
        raise ValueError(f"unknown figure kind {kind!r}; allowed: {', '.join(KINDS)}")
    compute, plot = KINDS[kind]
    computing, plotting = _options(compute), _options(plot) - _options(compute)
    unknown = sorted(set(options) - computing - plotting)
    if unknown:
        allowed = ", ".join(sorted(computing | plotting)) or "none"
        raise ValueError(f"unknown option {unknown[0]!r} for {kind}; allowed: {allowed}")
    table = trials_table(study_or_frame)
    if kind != "importance" and unframed(table):  # importance says itself what it reads and what to run
        raise NotEnoughData(UNFRAMED)
    data = compute(table, **{k: v for k, v in options.items() if k in computing})
    return plot(data, **{k: v for k, v in options.items() if k in plotting})


def _options(function) -> set:
    """The keyword options of a compute or plot function: its parameters after the data."""
    return set(list(inspect.signature(function).parameters)[1:])


def write_figure(study_or_frame, kind: str, out_path, **options) -> Path:
    """Compute, draw and write one figure: .html (self-contained), .png, .svg or .pdf; returns the path."""
    return export.write(figure(study_or_frame, kind, **options), out_path)
