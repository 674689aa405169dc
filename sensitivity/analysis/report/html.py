"""The HTML pieces every section of the report is made of: tables, figures, notes, warnings."""
from __future__ import annotations

import html

import pandas as pd

from sensitivity.analysis.table import NotEnoughData, regime_note

STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-top:.6em}table{border-collapse:collapse;margin:.6em 0}
td,th{border:1px solid #ddd;padding:3px 8px;text-align:right;font-size:.9em}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}.missing{color:#8a5a00;background:#fff6e0;padding:.5em 1em}
.note{color:#555}nav a{margin-right:1em}.scroll{overflow-x:auto}.warning{color:#8a1c00;background:#ffece6;
padding:.5em 1em}ul.findings li{margin:.5em 0;line-height:1.4}.verdict{display:inline-block;min-width:8.5em;
font-weight:600;font-size:.85em;padding:1px 6px;margin-right:.4em;border-radius:3px;background:#eee;text-align:center}
.verdict.supported{background:#ffe0dd}.verdict.not-supported{background:#ddeeff}.verdict.inconclusive{background:#eee}
.verdict.not-tested{background:#fff6e0}
.verdict.not-testable{background:#fff6e0}.verdict.settled{background:#ffe0dd}.verdict.not-settled{background:#eee}
details{margin:.6em 0}summary{cursor:pointer;color:#1f4e99}"""


def table_html(frame: pd.DataFrame, empty: str = "no rows") -> str:
    if frame.empty:
        return missing_html(empty)
    return '<div class="scroll">' + frame.to_html(index=False, border=0, na_rep="-",
                                                   float_format=lambda v: f"{v:.4g}") + "</div>"


def figure_html(fig, anchor: str) -> str:
    div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{anchor}",
                      config={"displaylogo": False, "responsive": True})
    return f'<div class="figure" data-kind="{anchor}">{div}</div>'


def missing_html(message: str) -> str:
    return f'<p class="missing">{html.escape(message)}</p>'


def warning_html(message: str) -> str:
    return f'<p class="warning">{html.escape(message)}</p>'


def note_html(message: str) -> str:
    return f'<p class="note">{html.escape(message)}</p>'


def guarded(build) -> str:
    """What `build` makes, or what would fill the section where the data is missing."""
    try:
        return build()
    except NotEnoughData as reason:
        return missing_html(str(reason))


def regime_html(rows: pd.DataFrame, extra: str = "") -> str:
    """The note a section opens with: the regimes of the rows it used ("Regime: native")."""
    return f'<p class="note regime">{html.escape(regime_note(rows) + extra)}.</p>'


def origin_html(source, sources) -> str:
    """"From study S." where a section's data comes from a study beside the main one."""
    label = source.attrs.get("study")
    return note_html(f"From study {label}.") if source is not sources[0] and label else ""


def difference_text(row: dict) -> str:
    """A comparison's difference with its interval and p, or why it has no interval."""
    if row["low"] is None or row["low"] != row["low"]:
        return f"{row['estimate']:+.3f} ({row['n_a']} and {row['n_b']} seeds: no interval)"
    return f"{row['estimate']:+.3f} [{row['low']:+.3f}, {row['high']:+.3f}] p={row['p']:.2g}"
