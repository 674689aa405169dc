"""The table of every figure: `FIGURES` names, for each kind, the module that holds its typed data (`Info`), the
compute that returns it and the `plot(info)` that draws it (after Optuna's `visualization/_contour.py`). It feeds
`sensitivity plot --kind`, `sensitivity export --figure` and the report's sections, so that every figure the report
draws can be plotted and exported alone; a new figure is one module of `analysis/figures/` and one line here.

A module is named by its import path, so that reading the kinds (the command line's choices) imports no plotting
library. A figure module imports no claim: the findings figure's data is handed over here (`findings_info`), by
the table that stands above both. A module whose `READS` is "study" computes from the Optuna study itself (a
designed study's indices), the others from its trial table.
"""
from __future__ import annotations

import importlib
import inspect
from pathlib import Path

FIGURES = {  # kind: its module, in the order the report draws them
    "findings": "sensitivity.analysis.figures.findings",
    "frontier": "sensitivity.analysis.figures.frontier",
    "designed-indices": "sensitivity.analysis.figures.designed_indices",
    "designed-interactions": "sensitivity.analysis.figures.designed_interactions",
    "importance": "sensitivity.analysis.figures.importance",
    "isolation": "sensitivity.analysis.figures.isolation",
    "seeds": "sensitivity.analysis.figures.seeds",
    "resources": "sensitivity.analysis.figures.resources",
    "divergence": "sensitivity.analysis.figures.divergence",
    "curves": "sensitivity.analysis.figures.curves",
    "slice": "sensitivity.analysis.figures.slice",
    "contour": "sensitivity.analysis.figures.contour",
    "parallel": "sensitivity.analysis.figures.parallel",
    "dependence": "sensitivity.analysis.figures.dependence",
    "crossover": "sensitivity.analysis.figures.crossover",
    "transfer": "sensitivity.analysis.figures.transfer",
    "robustness": "sensitivity.analysis.figures.robustness",
    "ablation": "sensitivity.analysis.figures.ablation",
    "tunability": "sensitivity.analysis.figures.tunability",
}
KINDS = tuple(FIGURES)
# kinds drawn from any study's trials; the others need its planned trials of defaults (sensitivity transfer), its
# crossovers, its trained models attacked (sensitivity robustness), its ablation path or its design
STUDY_KINDS = ("findings", "frontier", "importance", "isolation", "slice", "contour", "parallel", "dependence", "curves",
               "seeds", "resources", "divergence")


def module_of(kind: str):
    """The module of figure `kind` (ValueError naming the kinds for an unknown one)."""
    if kind not in FIGURES:
        raise ValueError(f"unknown figure kind {kind!r}; allowed: {', '.join(FIGURES)}")
    return importlib.import_module(FIGURES[kind])


def findings_info(table, others=(), effect=None):
    """The findings figure's data for the Findings of `table` with `others` (`findings_figure_info`)."""
    # lazy: the claims and their statistics (pandas, scipy)
    from sensitivity.analysis.claims.findings import findings

    return findings_figure_info(findings(table, others) if effect is None else findings(table, others, effect))


def findings_figure_info(found):
    """The findings figure's data from Findings already computed: their claims and comparisons, and each claim's
    unit, the axis its comparisons are drawn on."""
    # lazy: the claims (pandas, scipy)
    from sensitivity.analysis.claims.registry import CLAIMS
    from sensitivity.analysis.figures.findings import Info

    return Info(found.claims, found.comparisons, {claim.name: claim.unit for claim in CLAIMS})


def any_study(kind: str) -> bool:
    """Whether figure `kind` is drawn for any study's trials, one another program wrote included (its module's
    ANY_STUDY): it needs neither a framework nor a regime."""
    return bool(getattr(module_of(kind), "ANY_STUDY", False))


def compute_of(kind: str):
    """The function that computes figure `kind`'s data: its module's `compute`, or the one handed over here."""
    return findings_info if kind == "findings" else module_of(kind).compute


def figure(study_or_frame, kind: str, **options):
    """The figure of `kind` for a study or a trial table; each option goes to the compute or the plot function
    that takes it (e.g. parameters=["lr"] and bins=8 for isolation, top=10 for seeds)."""
    computing, plotting = _checked(kind, options)
    data = figure_data(study_or_frame, kind, **{k: v for k, v in options.items() if k in computing})
    return module_of(kind).plot(data, **{k: v for k, v in options.items() if k in plotting})


def figure_data(study_or_frame, kind: str, **options):
    """The data the figure of `kind` is drawn from (its module's `Info`, a NamedTuple of named, documented
    fields); each option goes to its compute function."""
    # lazy: pandas, optuna (the trial table)
    from sensitivity.analysis.table import UNFRAMED, NotEnoughData, trials_table, unframed

    computing, plotting = _checked(kind, options)
    if set(options) & plotting:
        raise ValueError(f"option {sorted(set(options) & plotting)[0]!r} of {kind} is the figure's, not its data's")
    if getattr(module_of(kind), "READS", "table") == "study":
        if not hasattr(study_or_frame, "user_attrs"):
            raise NotEnoughData(f"the {kind} figure reads a designed study itself (sweep --design), not a trial table")
        return compute_of(kind)(study_or_frame, **options)
    table = trials_table(study_or_frame)
    if kind != "importance" and unframed(table) and not any_study(kind):  # importance says itself what to run
        raise NotEnoughData(UNFRAMED)
    return compute_of(kind)(table, **options)


def _checked(kind: str, options) -> tuple:
    """(the compute's options, the plot's own options) of `kind`, once every option is known to one of them."""
    compute, plot = compute_of(kind), module_of(kind).plot
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
    # lazy: plotly and kaleido
    from sensitivity.analysis.figures import export

    return export.write(figure(study_or_frame, kind, **options), out_path)
