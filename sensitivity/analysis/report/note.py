"""The report as a study's note in optuna-dashboard (`report --to-dashboard`, written by `studies.notes.publish`):
Markdown with the Findings, the importance table of `sensitivity importance` (the estimator that fits the
sampling, with intervals; where it cannot be computed, why) and the report's figures, each an image of the study's
artifacts, so that optuna-dashboard shows them where users look. `figure_files` draws the figures as PNG."""
from __future__ import annotations

import math

from sensitivity.analysis.figure_table import FIGURES, figure
from sensitivity.analysis.rankings.importance import LABELS as REPORT_LABELS
from sensitivity.analysis.rankings.importance import parameter_importance
from sensitivity.analysis.rankings.plain import LABELS
from sensitivity.analysis.table import REGIME, NotEnoughData, trials_table
from sensitivity.studies.trial_rows import cached_beside

ORIGIN = ("Written by `sensitivity report --to-dashboard`; a rerun replaces this note and the figures (artifacts "
          "named sensitivity-KIND.png).")


def figure_files(study, log=None) -> list:
    """[(filename, PNG bytes, mimetype, title)] of each figure kind the study's trials can draw (`FIGURES`): those
    they cannot (no defaults, no design...) are left out, as the report says why in its page. The importance is the
    report's, read back from its cache."""
    # lazy: plotly, kaleido
    from sensitivity.analysis.figures import importance as importance_figure
    from sensitivity.analysis.figures.export import image

    out = []
    for kind in FIGURES:
        try:
            drawn = (importance_figure.plot(report_importance(study)) if kind == "importance" else
                     figure(study, kind))
        except (NotEnoughData, ValueError, RuntimeError, KeyError) as reason:
            if log:
                log(f"{kind}: not drawn ({str(reason).splitlines()[0] if str(reason) else type(reason).__name__})")
            continue
        out.append((f"sensitivity-{kind}.png", image(drawn, "png"), "image/png", drawn.layout.title.text or kind))
    return out


def report_importance(study):
    """The report's importance of the study's trials (fANOVA and PED-ANOVA per regime, with intervals), from the
    cache the report wrote beside the study (`trial_rows.cached_beside`)."""
    table = trials_table(study)
    return cached_beside(table, "importance", lambda: parameter_importance(table))


def report_importance_markdown(found) -> str:
    """The report's importance table (`rankings.importance.Importance`) as Markdown, one table per regime."""
    rows, lines = found.rows, []
    for block, part in rows.groupby(REGIME, sort=False):
        lines += [f"**{'All trials, the regime a parameter' if block == 'all' else f'Regime {block}'}** "
                  f"({int(part['n_trials'].max())} sampled trials; 95% bootstrap intervals)", "",
                  "| parameter | " + " | ".join(REPORT_LABELS[e] for e in part["evaluator"].unique()) + " |",
                  "|---|" + "---|" * part["evaluator"].nunique()]
        for name, p in part.groupby("parameter", sort=False):
            cells = {e: _cell([v, lo, hi]) for e, v, lo, hi in zip(p["evaluator"], p["importance"], p["low"],
                                                                     p["high"])}
            lines.append(f"| {name} | " + " | ".join(cells.get(e, "") for e in part["evaluator"].unique()) + " |")
        verdicts = found.verdicts.get(block, {})
        lines += [""] + [f"{REPORT_LABELS[e]}: {'settled' if v['settled'] else 'not settled'}: {v['why']}."
                         for e, v in verdicts.items()] + [""]
    return "\n".join(lines)


def _cell(values) -> str:
    if not values:
        return ""
    est, low, high = values
    return f"{est:.3f} [{low:.3f}, {high:.3f}]" if low is not None and math.isfinite(low) else f"{est:.3f}"


def importance_markdown(record: dict) -> str:
    """The importance record of `sensitivity importance` as Markdown tables, one per group (framework)."""
    lines = []
    if "sampling" in record:
        sampling = record["sampling"]
        lines += [f"Sampling: **{sampling['family']}** ({sampling['sampler']}): {sampling['why']}.", "",
                  f"Method: {record['method']}.", "", f"{record['total'][0].upper()}{record['total'][1:]}.", ""]
    groups = record.get("per_group") or record.get("per_framework") or {}
    for group, r in groups.items():
        params = r.get("parameters") or {}
        lines.append(f"**{group}** ({r.get('n', '?')} trials)" + (f": {r['why']}" if r.get("why") else ""))
        keys = list(dict.fromkeys(k for p in params.values() for k in p if isinstance(p[k], list)))
        if params and keys:
            lines += ["", "| parameter | " + " | ".join(LABELS.get(k, k) for k in keys) + " |",
                      "|---|" + "---|" * len(keys)]
            for name, p in params.items():
                lines.append(f"| {name} | " + " | ".join(_cell(p.get(k)) for k in keys) + " |")
        lines.append("")
    return "\n".join(lines)


def note_markdown(study_name: str, findings: str, importance: str, figures: list, urls: dict) -> str:
    """The note: Findings (as `sensitivity findings` prints them), importance, then each figure of `figures`
    ([(filename, title)]) by its URL in `urls`."""
    parts = [f"# sensitivity: {study_name}", "", ORIGIN, "", "## Findings", "", "```", findings.rstrip(), "```", "",
             "## Importance", "", importance.rstrip(), "", "## Figures", ""]
    for name, title in figures:
        if name in urls:
            parts += [f"### {title}", "", f"![{name}]({urls[name]})", ""]
    return "\n".join(parts) + "\n"
