"""One self-contained HTML page about a study: plotly.js inline once, every figure as a div, the tables,
the environment the trials ran in and the study's storage (never its password). It opens offline.

It opens with the findings: what the studies' data says about each claim, with verdicts, effect sizes,
intervals and Holm-corrected tests (`findings`, drawn by `claims.findings_html`).

A section without the data it needs says what would fill it. "Transfer of defaults" and "Robustness" come
from the study's trials of defaults and its robustness records, or from another study given beside it
(the study of `sensitivity transfer`, say). Every section says the regime (`semantics`) its numbers come
from, read from the rows it used; where it holds both, they are kept apart (rows, panels, traces).
"""
from __future__ import annotations

import datetime
import html
from pathlib import Path

import pandas as pd

from sensitivity.analysis.figure_table import FIGURES, any_study, module_of
from sensitivity.analysis.figures import ablation as ablation_figure
from sensitivity.analysis.figures import frontier as frontier_figure
from sensitivity.analysis.figures import resources as resources_figure
from sensitivity.analysis.figures import seeds as seeds_figure
from sensitivity.analysis.figures import tunability as tunability_figure
from sensitivity.analysis.intervals import Interval
from sensitivity.analysis.rankings.designed import designed_importance, importance_record
from sensitivity.analysis.report.findings import findings_html
from sensitivity.analysis.report.html import (STYLE, difference_text, figure_html, guarded, missing_html, note_html,
                                              regime_html, table_html)
from sensitivity.analysis.report.importance import designed_html, importance_html
from sensitivity.analysis.report.papers import forecast_html, papers_html
from sensitivity.analysis.report.robustness import robustness_html
from sensitivity.analysis.report.transfer import transfer_html
from sensitivity.analysis.table import (OUTCOMES, REGIME, UNFRAMED, NotEnoughData, regime_sorted, regimes_of,
                                        trials_table, unframed)
from sensitivity.analysis.tables.ablation import ablation_path
from sensitivity.analysis.tables.curves import DRAWN_FIELDS
from sensitivity.analysis.tables.frontier import runtime_accuracy_frontier
from sensitivity.analysis.tables.resources import resource_use
from sensitivity.analysis.tables.robustness import robustness_curves
from sensitivity.analysis.tables.runtime import first_same_configuration_times, parallel_ratios, ratios_text
from sensitivity.analysis.tables.seeds import NEEDS_SEEDS, has_intervals, seed_intervals
from sensitivity.analysis.tables.summary import framework_summary
from sensitivity.analysis.tables.tunability import point_text
from sensitivity.config.design import DESIGN_ATTR
from sensitivity.core.attacks import PGD_STEPS

ENVIRONMENT = (("host", "env_host"), ("CPU", "env_cpu"), ("GPU", "gpu_name"), ("device", "env_device"),
               ("python", "env_python"), ("numpy", "env_numpy"), ("git revision", "env_git_revision"),
               ("initialiser", "env_init"), ("threads", "env_threads"))


def write_report(study, out_path, *, others=()) -> Path:
    """Write the report of `study` (or of a trial table) to `out_path` (.html); returns the path.
    `others` are further studies (or tables) whose transfer matrix or robustness records fill those
    sections where `study` has none, such as the study of `sensitivity transfer`."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = trials_table(study)
    designed = [(s.study_name, designed_record(s)) for s in (study, *others)
                if DESIGN_ATTR in getattr(s, "user_attrs", {})]  # studies, not tables: a design reads the study
    out.write_text(render_report(table, [trials_table(other) for other in others], designed), encoding="utf-8")
    return out


def designed_record(study) -> dict:
    """`designed.importance_record` of a study run with `sweep --design`."""
    return importance_record(designed_importance(study))


DRAWN = {"curves": {"fields": DRAWN_FIELDS}}  # options of a figure's compute function: only what the figure draws
# the page's order: a figure kind is drawn in the section of its own name, or in the one DRAWN_IN names; a kind of
# `figure_table.FIGURES` in neither gets a section of its own before "papers", titled by its module's TITLE
ORDER = ("findings", "study", "environment", "summary", "tunability", "frontier", "runtime", "importance", "isolation",
         "seeds", "resources", "divergence", "curves", "slice", "contour", "parallel", "dependence", "transfer",
         "robustness", "ablation", "papers", "forecast")
DRAWN_IN = {"designed-indices": "importance", "designed-interactions": "importance", "crossover": "transfer"}
TITLES = {"study": "Study", "environment": "Environment", "summary": "Framework by dataset",
          "runtime": "Runtime beside accuracy", "papers": "The study's numbers beside ours",
          "forecast": "Forecast beside measured"}  # the sections that draw no figure of their own


def sections() -> list:
    """[(anchor, title)] of the page's sections in their order (see ORDER)."""
    more = [kind for kind in FIGURES if kind not in ORDER and kind not in DRAWN_IN]
    at = ORDER.index("papers")
    anchors = [*ORDER[:at], *more, *ORDER[at:]]
    return [(anchor, TITLES.get(anchor) or module_of(anchor).TITLE) for anchor in anchors]


UNFRAMED_SECTIONS = ("study", "environment", "importance")  # a study without frameworks: no groups to invent, and
# the figures of any study's trials (`figure_table.any_study`)


def render_report(table: pd.DataFrame, others=(), designed=()) -> str:
    """The page of trial table `table`, with the tables `others` beside it, and the importance of the designed
    studies `designed` ([(name, `designed_record`)]) leading its importance section."""
    # lazy: plotly
    from plotly.offline import get_plotlyjs  # plotly: a heavy import, made when a page is drawn

    name = table.attrs.get("study", "trial table")
    builders = _sections(table, list(others), list(designed))
    shown = [s for s in sections() if s[0] in UNFRAMED_SECTIONS or (s[0] in FIGURES and any_study(s[0]))] if unframed(
        table) else sections()
    drawn = {anchor: builders.get(anchor, lambda anchor=anchor: _figure_section(table, anchor))()
             for anchor, _ in shown}
    nav = " ".join(f'<a href="#{anchor}">{html.escape(title)}</a>' for anchor, title in shown)
    body = "\n".join(f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{drawn[anchor]}\n</section>'
                     for anchor, title in shown)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>sensitivity report: '
            f'{html.escape(name)}</title>\n<style>{STYLE}</style>\n<script type="text/javascript">{get_plotlyjs()}'
            f'</script></head>\n<body><h1>sensitivity report: {html.escape(name)}</h1>\n<nav>{nav}</nav>\n{body}\n'
            f'</body></html>\n')


def _sections(table: pd.DataFrame, others, designed=()) -> dict:
    """{anchor: the function that draws its section's HTML} for every section that is not one figure alone
    (`_figure_section` draws those)."""
    sources = [table, *others]
    return {"findings": lambda: guarded(lambda: findings_html(table, others, designed)),
            "study": lambda: study_section(table, others),
            "environment": lambda: _environment(table),
            "summary": lambda: guarded(lambda: _summary(table)),
            "frontier": lambda: guarded(lambda: _frontier(table)),
            "importance": lambda: "".join(designed_html(name, record) for name, record in designed)
            + guarded(lambda: importance_html(table)),
            "seeds": lambda: guarded(lambda: _seeds(table)),
            "resources": lambda: guarded(lambda: _resources(table)),
            "transfer": lambda: _transfer(sources),
            "runtime": lambda: _runtime(sources),
            "robustness": lambda: _first_of(sources, robustness_curves, _robustness, "run sensitivity robustness"),
            "ablation": lambda: _first_of(sources, ablation_path, _ablation, "run sensitivity ablate"),
            "tunability": lambda: _first_of(sources, tunability_figure.compute, _tunability,
                                            "run sensitivity tunability"),
            "papers": lambda: papers_html(sources), "forecast": lambda: forecast_html(sources)}


def study_section(table: pd.DataFrame, others=()) -> str:
    attrs = table.attrs
    counts = table["outcome"].value_counts()
    rows = [("study", attrs.get("study", "(a trial table, not a study)")),
            ("storage", attrs.get("storage", "unknown")), ("dataset", attrs.get("dataset") or "unknown"),
            ("objectives", ", ".join(attrs.get("directions") or []) or "unknown"),
            ("final trials", f"{len(table)}: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES)),
            ("regimes", regime_counts(table)),
            *([("framework", UNFRAMED)] if unframed(table) else []),
            ("report written", datetime.datetime.now().isoformat(" ", "seconds"))]
    rows += [("with study", f"{o.attrs.get('study', 'a trial table')}: {len(o)} final trials ({regime_counts(o)}; "
                            "transfer, robustness)") for o in others]
    return table_html(pd.DataFrame(rows, columns=["", "value"]))


def regime_counts(table: pd.DataFrame) -> str:
    """"native: 38 trials; canonical: 12 trials": the final trials of each regime, native first."""
    counts = table[REGIME].value_counts() if REGIME in table else pd.Series(dtype=int)
    return "; ".join(f"{r}: {counts[r]} trial{'' if counts[r] == 1 else 's'}"
                     for r in regimes_of(table)) or "none recorded"


def environment(table: pd.DataFrame) -> pd.DataFrame:
    """Where the trials ran: framework versions per framework, then host, CPU, GPU, git revision..., and
    the optimizer implementations each framework ran in each regime (the env's `semantics` record)."""
    rows = []
    if "framework_version" in table and table["framework_version"].notna().any():
        versions = table.dropna(subset=["framework_version"]).groupby("framework")["framework_version"].unique()
        rows += [(f"{framework} version", ", ".join(map(str, v))) for framework, v in versions.items()]
    for label, column in ENVIRONMENT:
        if column in table and table[column].notna().any():
            rows.append((label, ", ".join(sorted(map(str, table[column].dropna().unique())))))
    return pd.DataFrame(rows + optimizers(table), columns=["", "value"])


def optimizers(table: pd.DataFrame) -> list:
    """[("optimizer (torch, native)", "torch.optim.SGD(...), ...")]: the distinct optimizer implementations
    recorded in the env's `semantics` per framework and regime; none where no trial recorded one."""
    if "env_semantics" not in table:
        return []
    # each record once per framework and regime: the table holds equal records as one object (`table._compact`)
    distinct = {(fw, regime, id(record)): record
                for fw, regime, record in zip(table["framework"], table[REGIME], table["env_semantics"])}
    records = [(fw, (record.get("regime") or regime), record.get("optimizer"))
               for (fw, regime, _), record in distinct.items() if isinstance(record, dict) and record.get("optimizer")]
    found = regime_sorted(pd.DataFrame(records, columns=["framework", REGIME, "optimizer"]), [REGIME, "framework"])
    return [(f"optimizer ({fw}, {regime})", ", ".join(sorted(part["optimizer"].unique())))
            for (fw, regime), part in found.groupby(["framework", REGIME], sort=False)]


def _environment(table: pd.DataFrame) -> str:
    env = environment(table)
    if env.empty:
        return missing_html("not recorded: the trials carry no environment (env) attributes")
    return regime_html(table) + table_html(env)


def _summary(table: pd.DataFrame) -> str:
    summary = framework_summary(table)
    return regime_html(summary) + table_html(summary)


def _figure_section(table: pd.DataFrame, kind: str) -> str:
    """A section that is one figure of FIGURES: the regimes of its rows, then the figure."""
    module = module_of(kind)

    def build():
        data = module.compute(table, **DRAWN.get(kind, {}))
        rows = getattr(data, "rows", None)
        regimes = regime_html(rows) if isinstance(rows, pd.DataFrame) and REGIME in rows and (
            rows[REGIME].notna().any() or not unframed(table)) else ""  # a study without regimes names none
        return regimes + figure_html(module.plot(data), kind)
    return guarded(build)


def _frontier(table: pd.DataFrame) -> str:
    frontier = runtime_accuracy_frontier(table)
    note = (f'<p class="note">Reference point for the hypervolume: accuracy {frontier.reference_point[0]:g}, '
            f'train time {frontier.reference_point[1]:.4g} s (1.1 x the slowest ok trial), shared by every '
            'regime and framework.</p>')
    apart = ", a frontier for each" if len(regimes_of(frontier.points)) > 1 else ""
    return (regime_html(frontier.points, apart) + figure_html(frontier_figure.plot(frontier), "frontier") + note
            + table_html(frontier.summary))


def _runtime(sources: list) -> str:
    """The sweep's times against the same configurations run alone, and the same configuration's time to target
    and accuracy at equal wall-clock on every framework (`runtime`)."""

    ratios = parallel_ratios(sources[0], sources[1:])
    alone = (note_html("Train time in the main study over the same configuration and seed run alone (sensitivity "
                       "timing), per framework: geometric mean over the configurations timed, with its 95% "
                       "interval. In words: " + ratios_text(ratios).removeprefix("; ") + ".")
             + table_html(ratios)) if len(ratios) else missing_html(
        "the main study's train times were measured with trials side by side; none was timed alone: run "
        "sensitivity timing SWEEP and give its study with --with-study")
    times, study = first_same_configuration_times(sources)
    if times.empty:
        return alone + missing_html("no study holds one configuration run on two frameworks or more: run "
                                    "sensitivity transfer and give its study with --with-study")
    return alone + note_html(
        f"The same configuration on every framework (study {study}): mean time to the lowest mean final validation "
        "accuracy among the frameworks (target), over the runs that reached it, and validation accuracy after the "
        "last epoch finished within the shortest mean train time among them (budget), 95% intervals over "
        "seeds.") + regime_html(times) + table_html(_times_shown(times))


def _times_shown(times: pd.DataFrame) -> pd.DataFrame:
    shown = regime_sorted(times, [REGIME, "dataset", "default", "framework"])
    return shown.rename(columns={"n": "runs", "target": "target val accuracy", "reached": "runs that reached it",
                                 "time_text": "time to target", "budget": "budget s",
                                 "at_budget_text": "val accuracy at budget"})[
        [REGIME, "dataset", "default", "framework", "runs", "target val accuracy", "runs that reached it",
         "time to target", "budget s", "val accuracy at budget"]]


def _seeds(table: pd.DataFrame) -> str:
    intervals = seed_intervals(table)
    note = "" if has_intervals(intervals) else missing_html(
        f"{NEEDS_SEEDS} (the space's `seeds: 2` or more); the means below are single runs, n=1")
    columns = ["framework", REGIME, "configuration", "n_seeds", "accuracy_mean", "accuracy_low", "accuracy_high",
               "train_time_s_mean", "train_time_s_low", "train_time_s_high"]
    shown = intervals.sort_values("accuracy_mean", ascending=False).head(30)[columns]
    drawn = figure_html(seeds_figure.plot(seeds_figure.Info.of(intervals)), "seeds")
    return regime_html(intervals) + note + drawn + table_html(shown)


def _resources(table: pd.DataFrame) -> str:
    usage = resource_use(table)
    return regime_html(usage) + figure_html(resources_figure.plot(resources_figure.Info.of(usage)),
                                                            "resources") + table_html(usage)


def _first_of(sources, compute, section, missing: str) -> str:
    """The section drawn from the first source `compute` finds data in; else what would fill it."""
    reasons = []
    for source in sources:
        try:
            data = compute(source)
        except NotEnoughData as reason:
            reasons.append(str(reason))
            continue
        label = source.attrs.get("study")
        origin = note_html(f"From study {label}.") if source is not sources[0] and label else ""
        return origin + section(data, source)
    return missing_html(f"not computed for this study: {missing} ({reasons[0]})")


def _transfer(sources: list) -> str:
    """The crossovers of any source, and framework transfer from the source whose defaults span the most
    datasets and frameworks (`transfer.richest_transfer`)."""
    try:
        return transfer_html(sources)
    except NotEnoughData as reason:
        return missing_html(f"not computed for this study: run sensitivity transfer or crossover ({reason})")


def _tunability(found, source=None) -> str:
    rows = found.rows
    note = note_html("Each framework's own default against the configuration a grid around it selected on validation "
                     "(selection seeds), both then run on the same fresh seeds: the difference in test accuracy, "
                     "paired by seed, with its 95% interval. A knob alone: that knob tuned, the others at the "
                     "default's values; its tuning risk: everything tuned minus everything but that knob. The "
                     "noise floor is the half-width of a difference between two independent sets of the default's "
                     "seeds. It is the gain of the selected configuration, not the best the grid holds.")
    shown = pd.DataFrame({REGIME: rows[REGIME], "default": rows["tunability"], "framework": rows["framework"],
                          "role": rows["role"], "chosen": [point_text(p) for p in rows["point"]],
                          "validation (selection)": rows["val_score"].round(4),
                          "difference [95%]": [difference_text(r) for r in rows.to_dict("records")],
                          "noise floor": rows["noise_floor"].round(4), "fresh seeds": rows["fresh_seeds"]})
    return note + figure_html(tunability_figure.plot(found), "tunability") + table_html(shown)


def _ablation(found, source=None) -> str:
    path = found.rows
    note = (f'<p class="note">From {html.escape(found.source)} to {html.escape(found.target)}, '
            f'{found.seeds} seeds per point: each step changes the knob that moved validation accuracy '
            'most (test accuracy beside it, never used to choose); mean and 95% interval (within the metric\'s '
            'range; n=2 gives the range, no interval).' + (f' No effect on this configuration, not walked: '
                                                        f'{html.escape(", ".join(found.inert))}.'
                                                        if found.inert else "") + '</p>')
    shown = path[["step", "change", "n"]].copy()
    for metric, label in (("val_accuracy", "validation accuracy"), ("accuracy", "test accuracy"),
                          ("train_time_s", "train time (s)")):
        shown[label] = [Interval(r[f"{metric}_mean"], r[f"{metric}_low"], r[f"{metric}_high"], r["n"],
                                 r[f"{metric}_method"]).text() for _, r in path.iterrows()]
    shown["change of validation accuracy"] = path["delta"]
    return note + figure_html(ablation_figure.plot(found), "ablation") + table_html(shown)


def _robustness(curves: pd.DataFrame, source: pd.DataFrame) -> str:
    return robustness_html(curves, source, PGD_STEPS)
