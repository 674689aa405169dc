"""One self-contained HTML page about a study: plotly.js inline once, every figure as a div, the tables,
the environment the trials ran in and the study's storage (never its password). It opens offline.

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

from sensitivity.analysis.frontier import runtime_accuracy_frontier
from sensitivity.analysis.importance import ALL as ALL_TRIALS
from sensitivity.analysis.importance import parameter_importance
from sensitivity.analysis.plots import KINDS, plot_frontier, plot_importance, plot_resources, plot_seeds
from sensitivity.analysis.resources import resource_use
from sensitivity.attacks import PGD_STEPS
from sensitivity.analysis.ablation import ablation_path, plot_ablation
from sensitivity.analysis.robustness import plot_robustness, robustness_curves
from sensitivity.analysis.seeds import NEEDS_SEEDS, has_intervals, seed_intervals
from sensitivity.analysis.summary import framework_summary
from sensitivity.analysis.table import (OUTCOMES, REGIME, NotEnoughData, regime_note, regime_sorted, regimes_of,
                                        trials_table)
from sensitivity.analysis.transfer import plot_transfer, transfer_matrix

ENVIRONMENT = (("host", "env_host"), ("CPU", "env_cpu"), ("GPU", "gpu_name"), ("device", "env_device"),
               ("python", "env_python"), ("numpy", "env_numpy"), ("git revision", "env_git_revision"),
               ("initialiser", "env_init"), ("threads", "env_threads"))
STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-top:.6em}table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;font-size:.9em}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}.missing{color:#8a5a00;background:#fff6e0;padding:.5em 1em}
.note{color:#555}nav a{margin-right:1em}.scroll{overflow-x:auto}"""


def write_report(study, out_path, *, others=()) -> Path:
    """Write the report of `study` (or of a trial table) to `out_path` (.html); returns the path.
    `others` are further studies (or tables) whose transfer matrix or robustness records fill those
    sections where `study` has none, such as the study of `sensitivity transfer`."""
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = render_report(trials_table(study), [trials_table(other) for other in others])
    out.write_text(text, encoding="utf-8")
    return out


def render_report(table: pd.DataFrame, others=()) -> str:
    from plotly.offline import get_plotlyjs

    name = table.attrs.get("study", "trial table")
    sources = [table, *others]
    sections = [("study", "Study", study_section(table, others)),
                ("environment", "Environment", _environment(table)),
                ("summary", "Framework by dataset", _guarded(lambda: _summary(table))),
                ("frontier", "Runtime-accuracy frontier", _guarded(lambda: _frontier(table))),
                ("importance", "Hyper-parameter importance", _guarded(lambda: _importance(table))),
                ("isolation", "Isolation of each parameter", _figure_section(table, "isolation")),
                ("seeds", "Seeds: mean and interval", _guarded(lambda: _seeds(table))),
                ("resources", "Resource use", _guarded(lambda: _resources(table))),
                ("divergence", "Divergence", _figure_section(table, "divergence")),
                ("curves", "Learning curves", _figure_section(table, "curves")),
                ("slice", "Slice", _figure_section(table, "slice")),
                ("contour", "Contour", _figure_section(table, "contour")),
                ("transfer", "Transfer of defaults", _first_of(sources, transfer_matrix, _transfer,
                                                               "run sensitivity transfer")),
                ("robustness", "Robustness", _first_of(sources, robustness_curves, _robustness,
                                                       "run sensitivity robustness")),
                ("ablation", "Ablation path between set-ups", _first_of(sources, ablation_path, _ablation,
                                                                        "run sensitivity ablate"))]
    nav = " ".join(f'<a href="#{anchor}">{html.escape(title)}</a>' for anchor, title, _ in sections)
    body = "\n".join(f'<section id="{anchor}"><h2>{html.escape(title)}</h2>\n{content}\n</section>'
                     for anchor, title, content in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>sensitivity report: '
            f'{html.escape(name)}</title>\n<style>{STYLE}</style>\n<script type="text/javascript">{get_plotlyjs()}'
            f'</script></head>\n<body><h1>sensitivity report: {html.escape(name)}</h1>\n<nav>{nav}</nav>\n{body}\n'
            f'</body></html>\n')


def study_section(table: pd.DataFrame, others=()) -> str:
    attrs = table.attrs
    counts = table["outcome"].value_counts()
    rows = [("study", attrs.get("study", "(a trial table, not a study)")),
            ("storage", attrs.get("storage", "unknown")), ("dataset", attrs.get("dataset") or "unknown"),
            ("objectives", ", ".join(attrs.get("directions") or []) or "unknown"),
            ("final trials", f"{len(table)}: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in OUTCOMES)),
            ("regimes", regime_counts(table)),
            ("report written", datetime.datetime.now().isoformat(" ", "seconds"))]
    rows += [("with study", f"{o.attrs.get('study', 'a trial table')}: {len(o)} final trials ({regime_counts(o)}; "
                            "transfer, robustness)") for o in others]
    return table_html(pd.DataFrame(rows, columns=["", "value"]))


def regime_counts(table: pd.DataFrame) -> str:
    """"native: 38 trials; canonical: 12 trials": the final trials of each regime, native first."""
    counts = table[REGIME].value_counts() if REGIME in table else pd.Series(dtype=int)
    return "; ".join(f"{r}: {counts[r]} trial{'' if counts[r] == 1 else 's'}" for r in regimes_of(table)) or "none"


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
    records = [(fw, (record.get("regime") or regime), record.get("optimizer"))
               for fw, regime, record in zip(table["framework"], table[REGIME], table["env_semantics"])
               if isinstance(record, dict) and record.get("optimizer")]
    found = regime_sorted(pd.DataFrame(records, columns=["framework", REGIME, "optimizer"]), [REGIME, "framework"])
    return [(f"optimizer ({fw}, {regime})", ", ".join(sorted(part["optimizer"].unique())))
            for (fw, regime), part in found.groupby(["framework", REGIME], sort=False)]


def table_html(frame: pd.DataFrame, empty: str = "no rows") -> str:
    if frame.empty:
        return _missing(empty)
    return '<div class="scroll">' + frame.to_html(index=False, border=0, na_rep="-",
                                                   float_format=lambda v: f"{v:.4g}") + "</div>"


def figure_html(fig, anchor: str) -> str:
    div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{anchor}",
                      config={"displaylogo": False, "responsive": True})
    return f'<div class="figure" data-kind="{anchor}">{div}</div>'


def _missing(message: str) -> str:
    return f'<p class="missing">{html.escape(message)}</p>'


def _guarded(build) -> str:
    try:
        return build()
    except NotEnoughData as reason:
        return _missing(str(reason))


def regime_html(rows: pd.DataFrame, extra: str = "") -> str:
    """The note a section opens with: the regimes of the rows it used ("Regime: native")."""
    return f'<p class="note regime">{html.escape(regime_note(rows) + extra)}.</p>'


def _environment(table: pd.DataFrame) -> str:
    env = environment(table)
    if env.empty:
        return _missing("not recorded: the trials carry no environment (env) attributes")
    return regime_html(table) + table_html(env)


def _summary(table: pd.DataFrame) -> str:
    summary = framework_summary(table)
    return regime_html(summary) + table_html(summary)


def _figure_section(table: pd.DataFrame, kind: str) -> str:
    compute, plot = KINDS[kind]

    def build():
        data = compute(table)
        return regime_html(data) + figure_html(plot(data), kind)
    return _guarded(build)


def _frontier(table: pd.DataFrame) -> str:
    frontier = runtime_accuracy_frontier(table)
    note = (f'<p class="note">Reference point for the hypervolume: accuracy {frontier.reference_point[0]:g}, '
            f'train time {frontier.reference_point[1]:.4g} s (1.1 x the slowest ok trial), shared by every '
            'regime and framework.</p>')
    apart = ", a frontier for each" if len(regimes_of(frontier.points)) > 1 else ""
    return (regime_html(frontier.points, apart) + figure_html(plot_frontier(frontier), "frontier") + note
            + table_html(frontier.summary))


def _importance(table: pd.DataFrame) -> str:
    importance = parameter_importance(table)
    regimes = importance[importance[REGIME].ne(ALL_TRIALS)]
    extra = "; and all trials, the regime a parameter" if importance[REGIME].eq(ALL_TRIALS).any() else ""
    parts = [regime_html(regimes, extra), figure_html(plot_importance(importance), "importance")]
    for block, rows in importance.groupby(REGIME, sort=False):
        ranks = rows.pivot(index="parameter", columns="evaluator", values="importance")
        ranks = ranks.rename_axis(columns=None).reset_index().sort_values(ranks.columns[0], ascending=False)
        title = "All trials, the regime a parameter" if block == ALL_TRIALS else f"Regime {block}"
        parts.append(f"<h3>{html.escape(title)} (n={rows['n_trials'].max()} trials)</h3>" + table_html(ranks))
    parts += [_missing(f"{block}: {reason}") for block, reason in importance.attrs.get("missing", {}).items()]
    return "".join(parts)


def _seeds(table: pd.DataFrame) -> str:
    intervals = seed_intervals(table)
    note = "" if has_intervals(intervals) else _missing(
        f"{NEEDS_SEEDS} (the space's `seeds: 2` or more); the means below are single runs, n=1")
    columns = ["framework", REGIME, "configuration", "n_seeds", "accuracy_mean", "accuracy_low", "accuracy_high",
               "train_time_s_mean", "train_time_s_low", "train_time_s_high"]
    shown = intervals.sort_values("accuracy_mean", ascending=False).head(30)[columns]
    return regime_html(intervals) + note + figure_html(plot_seeds(intervals), "seeds") + table_html(shown)


def _resources(table: pd.DataFrame) -> str:
    usage = resource_use(table)
    return regime_html(usage) + figure_html(plot_resources(usage), "resources") + table_html(usage)


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
        origin = f'<p class="note">From study {html.escape(label)}.</p>' if source is not sources[0] and label else ""
        return origin + section(data)
    return _missing(f"not computed for this study: {missing} ({reasons[0]})")


def _transfer(cells: pd.DataFrame) -> str:
    note = ('<p class="note">Each default is judged against the target framework\'s own default run in the same '
            'regime; the matrices of different regimes stand side by side, native first.</p>')
    return regime_html(cells) + note + figure_html(plot_transfer(cells), "transfer") + table_html(cells)


def _ablation(path: pd.DataFrame) -> str:
    from sensitivity.analysis.intervals import Interval

    note = (f'<p class="note">From {html.escape(path.attrs["source"])} to {html.escape(path.attrs["target"])}, '
            f'{path.attrs["seeds"]} seeds per point: each step changes the knob that moved validation accuracy '
            'most (test accuracy beside it, never used to choose); mean and 95% interval (Student t, within the '
            'metric\'s range; n=2 gives the range).' + (f' No effect on this configuration, not walked: '
                                                        f'{html.escape(", ".join(path.attrs["inert"]))}.'
                                                        if path.attrs.get("inert") else "") + '</p>')
    shown = path[["step", "change", "n"]].copy()
    for metric, label in (("val_accuracy", "validation accuracy"), ("accuracy", "test accuracy"),
                          ("train_time_s", "train time (s)")):
        shown[label] = [Interval(r[f"{metric}_mean"], r[f"{metric}_low"], r[f"{metric}_high"], r["n"],
                                 r[f"{metric}_method"]).text() for _, r in path.iterrows()]
    shown["change of validation accuracy"] = path["delta"]
    return note + figure_html(plot_ablation(path), "ablation") + table_html(shown)


def _robustness(curves: pd.DataFrame) -> str:
    note = "" if (curves["n"] >= 2).any() else _missing(
        "one model per framework: no interval; keep the weights of 2 or more seeds for one")
    curves = curves.assign(cell=[f"{m:.3f} (n={n})" for m, n in zip(curves["accuracy_mean"], curves["n"])])
    white = curves[curves["kind"].eq("white-box")].pivot(
        index=[REGIME, "dataset", "attack", "target_framework"], columns="eps", values="cell")
    cross = curves[curves["kind"].eq("transfer")].pivot(
        index=[REGIME, "dataset", "attack", "source_framework", "target_framework"], columns="eps", values="cell")
    tables = [("White-box accuracy by eps", white), ("Accuracy on examples made on another model, by eps", cross)]
    method = ('<p class="note">White-box attacks through each model\'s own framework: FGSM, and PGD with a random '
              f'start and {PGD_STEPS} steps of 2.5 eps / {PGD_STEPS}; eps is an L-infinity radius in the data\'s units, '
              f'on the first {int(curves["samples"].min())} test samples. n: the models (seeds, configurations) behind '
              'a mean; intervals are 95% Student t. Examples made on a model of one regime and tested on a model of '
              'the other are left out.</p>')
    return regime_html(curves) + note + method + figure_html(plot_robustness(curves), "robustness") + "".join(
        f"<h3>{title}</h3>" + table_html(regime_sorted(frame.rename(columns=lambda e: f"eps {e:g}").reset_index(),
                                                      frame.index.names))
        for title, frame in tables if len(frame))
