"""Every figure of the analysis: one thin `plot_<kind>` per kind, drawing what its compute function returned
(`study`: the figures of one study; `comparisons`: those across studies), and `KINDS`, the registry of
kind -> (compute, plot): a new figure is one line there. `write_figure` computes, draws and writes one figure
from a study or a trial table.
"""
from __future__ import annotations

import inspect
from pathlib import Path

from sensitivity.analysis.figures import export
from sensitivity.analysis.figures.results import (ablation_data, contour_data, curves_data, divergence_data,
                                                 importance_data, isolation_data, resources_data, robustness_data,
                                                 seeds_data, slice_data, transfer_data)
from sensitivity.analysis.claims.findings import findings
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.figures.comparisons import (plot_ablation, plot_crossover, plot_findings, plot_robustness,
                                                    plot_transfer)
from sensitivity.analysis.figures.study import (CURVES_MAX, POINTS_MAX, drawn, plot_contour, plot_curves,
                                              plot_divergence, plot_frontier, plot_importance, plot_isolation,
                                              plot_resources, plot_seeds, plot_slice)
from sensitivity.analysis.table import UNFRAMED, NotEnoughData, trials_table, unframed


__all__ = ["CURVES_MAX", "KINDS", "POINTS_MAX", "STUDY_KINDS", "drawn", "figure", "figure_data", "plot_ablation",
           "plot_contour", "plot_crossover", "plot_curves", "plot_divergence", "plot_findings", "plot_frontier",
           "plot_importance", "plot_isolation", "plot_resources", "plot_robustness", "plot_seeds", "plot_slice",
           "plot_transfer", "write_figure"]

KINDS = {  # each compute returns a NamedTuple of named, documented fields (figure_results), which its plot draws
    "findings": (findings, plot_findings),
    "frontier": (runtime_accuracy_frontier, plot_frontier),
    "importance": (importance_data, plot_importance),
    "isolation": (isolation_data, plot_isolation),
    "slice": (slice_data, plot_slice),
    "contour": (contour_data, plot_contour),
    "curves": (curves_data, plot_curves),
    "seeds": (seeds_data, plot_seeds),
    "resources": (resources_data, plot_resources),
    "divergence": (divergence_data, plot_divergence),
    "transfer": (transfer_data, plot_transfer),
    "robustness": (robustness_data, plot_robustness),
    "ablation": (ablation_data, plot_ablation),
}
# kinds drawn from any study; the others need its planned trials of defaults (sensitivity transfer), its
# trained models attacked (sensitivity robustness) or its ablation path (sensitivity ablate)
STUDY_KINDS = tuple(kind for kind in KINDS if kind not in ("transfer", "robustness", "ablation"))


def figure(study_or_frame, kind: str, **options):
    """The figure of `kind` for a study or a trial table; each option goes to the compute or the plot
    function that takes it (e.g. parameters=["lr"] and bins=8 for isolation, top=10 for seeds)."""
    computing, plotting = _checked(kind, options)
    return KINDS[kind][1](figure_data(study_or_frame, kind, **{k: v for k, v in options.items() if k in computing}),
                          **{k: v for k, v in options.items() if k in plotting})


def figure_data(study_or_frame, kind: str, **options):
    """The result the figure of `kind` is drawn from (a NamedTuple of named, documented fields); each option
    goes to its compute function."""
    computing, plotting = _checked(kind, options)
    if set(options) & plotting:
        raise ValueError(f"option {sorted(set(options) & plotting)[0]!r} of {kind} is the figure's, not its data's")
    table = trials_table(study_or_frame)
    if kind != "importance" and unframed(table):  # importance says itself what it reads and what to run
        raise NotEnoughData(UNFRAMED)
    return KINDS[kind][0](table, **options)


def _checked(kind: str, options) -> tuple:
    """(the compute's options, the plot's own options) of `kind`, once every option is known to one of them."""
    if kind not in KINDS:
        raise ValueError(f"unknown figure kind {kind!r}; allowed: {', '.join(KINDS)}")
    compute, plot = KINDS[kind]
    computing, plotting = _options(compute), _options(plot) - _options(compute)
    unknown = sorted(set(options) - computing - plotting)
    if unknown:
        allowed = ", ".join(sorted(computing | plotting)) or "none"
        raise ValueError(f"unknown option {unknown[0]!r} for {kind}; allowed: {allowed}")
    return computing, plotting


def _options(function) -> set:
    """The keyword options of a compute or plot function: its parameters after the data."""
    return set(list(inspect.signature(function).parameters)[1:])


def write_figure(study_or_frame, kind: str, out_path, **options) -> Path:
    """Compute, draw and write one figure: .html (self-contained), .png, .svg or .pdf; returns the path."""
    return export.write(figure(study_or_frame, kind, **options), out_path)
