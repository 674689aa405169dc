"""The findings as plain records, free of pandas: what `sensitivity findings` prints, as text or JSON.

Whoever computes the findings of a study alone (a report does) caches these records beside the study's
trial table under `cache_name` (`trial_rows.cached_beside`): `sensitivity findings` after it reads them by the
study's state alone (`cached_records`), neither its trials nor its table read, nor pandas imported.
"""
from __future__ import annotations

from sensitivity.analysis.statistics import REGIME
from sensitivity.studies.trial_rows import read_beside


def cache_name(effect: float) -> str:
    """The name the records of the findings with stated effect `effect` are cached under."""
    return f"findings-records-{effect!r}"


def cached_records(study, effect: float):
    """The records of the findings of `study` alone with stated effect `effect` (`findings.study_findings_records`)
    as an earlier process cached them while the study and the code are unchanged; None where none are."""
    found, records = read_beside(study, cache_name(effect))
    return records if found else None


def findings_text(records: dict, heading: str, effect: float, every: bool = False, verbose: bool = False) -> str:
    """The verdict and headline of each claim, by regime, under `heading` (one line each, at most 240
    characters); with `verbose`, its details (the sentence) beneath it; with `every`, each claim's comparisons
    beneath it. `records`: {"claims": [...], "comparisons": [...]} (`findings.findings_records`)."""
    tests = sum(row["p_holm"] is not None for row in records["comparisons"])
    lines = [records["summary"]] if records.get("summary") else []
    lines += [f"{heading}: {tests} tested comparisons, Holm-corrected within each claim and regime (the 95% "
              f"intervals are not); equivalent where two one-sided tests put a difference within +-{effect:g} of "
              "accuracy a dataset"]
    regimes = {}
    for row in records["claims"]:
        regimes.setdefault(row[REGIME], []).append(row)
    for regime, claims in regimes.items():
        lines.append(f"\n{regime}")
        for row in claims:
            lines.append(f"  [{row['verdict']}] {row['claim']}: {row.get('headline') or row['sentence']}")
            lines += table_lines(row.get("table") or [], "      ")
            if verbose:
                lines.append(f"      {row['sentence']}")
            if every:
                lines += [f"      - {c['sentence']}" for c in records["comparisons"]
                          if c[REGIME] == regime and c["claim"] == row["claim"]]
    return "\n".join(lines)


def table_lines(rows: list, indent: str) -> list:
    """A claim's table (one dict per row, the same keys) as aligned text lines under a heading line."""
    if not rows:
        return []
    columns = list(rows[0])
    cells = [columns] + [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return [indent + "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
