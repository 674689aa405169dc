"""The seed papers' numbers beside ours (search_spaces/papers.yaml), and a run's forecast beside what it
measured: the two sections a `sensitivity reproduce` report adds.

Ours, per paper cell: the trials of that default on its home framework (Caffe's, which cannot run here, on
each framework that ran it), on the cell's dataset or its stand-in, on the cell's device; test accuracy as the
mean over converged runs with its 95% interval over seeds, train time as the mean. A cell the study did not run
says why ("not run: files absent", "not in this preset").
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from sensitivity.analysis.intervals import interval_text, mean_interval
from sensitivity.analysis.report.html import missing_html, note_html, table_html, warning_html

PAPERS = Path(__file__).resolve().parents[3] / "search_spaces" / "papers.yaml"
PRESET_PAPER = {"liu2018": "gtdlbench", "dlbench": "dlbench"}


def load_papers(path: Path = PAPERS) -> dict:
    from sensitivity.config.files import read_mapping  # lazy: pydantic, which a report without papers skips
    return read_mapping(path)


def paper_rows(sources: list, papers: dict = None) -> pd.DataFrame:
    """One row per paper cell of the preset a source ran (its `reproduce` attribute): the paper's accuracy and
    time and ours with interval, the hardware and network of each."""
    from sensitivity.config.defaults import load_table  # lazy: pydantic, as above

    papers = papers or load_papers()
    entries = {e.name: e for e in load_table()}
    rows = []
    for source in sources:
        described = source.attrs.get("reproduce")
        if not described:
            continue
        placed = described.get("datasets", {})
        for cell in papers["cells"]:
            if cell["paper"] != PRESET_PAPER[described["preset"]]:
                continue
            entry = entries.get(cell["default"])
            homes = ([cell["runs_on"]] if cell.get("runs_on") else
                     described["frameworks"] if entry is not None and entry.runs_on == "all" else
                     [entry.runs_on] if entry is not None else [])
            for home in homes or [None]:
                rows.append(_row(cell, entry, home, source, described=described, placed=placed,
                                 hardware=papers["hardware"]))
    return pd.DataFrame(rows)


def _row(cell: dict, entry, home, source: pd.DataFrame, *, described: dict, placed: dict, hardware: dict) -> dict:
    status = placed.get(cell["dataset"], "not in this preset")
    dataset = cell["dataset"] if status == "run" else (status.split()[2] if status.startswith("run on ") else None)
    row = {"paper": cell["paper"], "framework": cell["framework"], "dataset": cell["dataset"], "device": cell["device"],
           "paper accuracy %": cell["accuracy"], "paper train s": _seconds(cell.get("train_s")),
           "paper hardware": hardware[cell["paper"]],
           "paper network": entry.original_model if entry is not None else "not in search_spaces/defaults.yaml",
           "ours on": home or "-", "our dataset": dataset or "-", "our accuracy %": "-", "our train s": "-",
           "our hardware": "-", "our network": "-"}
    ran_here = (entry is not None and home in described["frameworks"] and dataset is not None
                and cell["device"] == described.get("device", "cpu"))
    if not ran_here:
        row["our accuracy %"] = (status if status.startswith("not run") else
                                 "not run here: " + ("another device" if dataset else status)) if entry else \
            "not in this preset"
        if entry is not None and home not in described["frameworks"]:
            row["our accuracy %"] = "not in this preset"
        return row
    runs = source[source["default"].eq(entry.name) & source["framework"].eq(home) & source["dataset"].eq(dataset)]
    ok = runs[runs["outcome"].eq("ok")]
    if ok.empty:
        row["our accuracy %"] = f"no converged run ({len(runs)} runs)"
        return row
    interval = mean_interval(ok["accuracy"])
    scaled = lambda v: None if v is None else 100 * v
    row.update({"our accuracy %": interval_text(scaled(interval.mean), scaled(interval.low), scaled(interval.high),
                                                interval.n, digits=2),
                "our train s": _seconds(float(ok["train_time_s"].mean())),
                "our hardware": _hardware(ok), "our network": ", ".join(sorted(ok["env_model"].dropna().astype(str).unique()))})
    return row


def _seconds(value) -> str:
    if value is None:
        return "not stated"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _hardware(rows: pd.DataFrame) -> str:
    parts = []
    for column in ("env_cpu", "gpu_name"):
        if column in rows and rows[column].notna().any():
            parts.append(str(rows[column].dropna().iloc[0]))
    threads = rows["env_threads"].dropna() if "env_threads" in rows else []
    if len(threads):
        parts.append(f"{int(threads.iloc[0])} thread{'s' if int(threads.iloc[0]) != 1 else ''}")
    return ", ".join(parts) or "-"


def papers_html(sources: list) -> str:
    """The section "The study's numbers beside ours"."""
    described = next((s.attrs["reproduce"] for s in sources if s.attrs.get("reproduce")), None)
    if described is None:
        return missing_html("no study here was run by sensitivity reproduce liu2018|dlbench: the papers' numbers "
                            "are set beside a preset's only")
    rows = paper_rows(sources)
    scale = described.get("scale", 1.0)
    stand_ins = [f"{k}: {v}" for k, v in described.get("datasets", {}).items() if v != "run"]
    head = note_html(f"Preset {described['preset']}, native regime, {described['seeds']} seeds a cell, on "
                     f"{described.get('device', 'cpu')}; ours: mean test accuracy over converged runs with its 95% "
                     "interval over seeds, mean train time. The papers trained each framework's own network; ours "
                     "trains one framework-neutral network per dataset, named beside it. The papers' files name "
                     "their machines only (GTDLBench's CSVs: Server1); their CPU and GPU are as each paper "
                     "describes them.")
    if scale < 1 or stand_ins:
        head += warning_html(f"A rehearsal: budgets at {scale:g} of the published epochs"
                             + (f"; {'; '.join(stand_ins)}" if stand_ins else "")
                             + ". These numbers are not comparable with the paper's.")
    return head + table_html(rows)


def measured_beside(forecast_attrs: dict, table) -> dict:
    """The forecast a study kept beside what its final trials measured: summed train time (a diverged run at
    the time it stopped) and the ratio measured / forecast; the wall time of its last run, where it ran every
    trial the forecast was made for (a resumed run's wall is not the forecast's)."""
    final = table[table["state"].isin(("COMPLETE", "PRUNED"))] if "state" in table else table
    measured = float(final["train_time_s"].fillna(0).sum()) if "train_time_s" in final else 0.0
    forecast_s = forecast_attrs.get("train_s") or 0.0
    run = (table.attrs.get("last_run") if hasattr(table, "attrs") else None) or {}
    whole = run.get("trials") is not None and round(run["trials"]) == round(forecast_attrs.get("trials") or -1)
    wall = run.get("wall_s") if whole else None
    forecast_wall = forecast_attrs.get("wall_s")
    return {"forecast_train_s": forecast_s, "measured_train_s": measured, "trials": int(len(final)),
            "ratio": measured / forecast_s if forecast_s else None, "sampled": forecast_attrs.get("sampled", False),
            "measured_wall_s": wall, "wall_ratio": wall / forecast_wall if wall and forecast_wall else None}


def forecast_html(sources: list) -> str:
    """The section "Forecast beside measured": each study's forecast made before it ran, beside its final
    trials' summed train time (a diverged run at the time it stopped)."""
    rows = []
    for source in sources:
        kept = source.attrs.get("forecast")
        if not kept:
            continue
        found = measured_beside(kept, source)
        rows.append({"study": source.attrs.get("study"), "trials": found["trials"],
                     "forecast train s (summed)": found["forecast_train_s"],
                     "measured train s (summed)": found["measured_train_s"],
                     "measured / forecast": found["ratio"],
                     "forecast wall s": kept.get("wall_s"), "measured wall s": found["measured_wall_s"],
                     "measured / forecast wall": found["wall_ratio"], "slots": kept.get("slots"),
                     "forecast from": "the space's distribution" if found["sampled"] else "the plan's trials"})
    if not rows:
        return missing_html("no study here kept a forecast: sensitivity reproduce makes one before it launches, and "
                            "a sweep keeps one where sensitivity sweep --dry-run probed its cells first")
    return note_html("The forecast each study made before it launched, from the throughput probe (seconds per "
                     "step alone, cached per host and framework version), beside what its final trials measured; "
                     "a diverged run counts at the time it stopped.") + table_html(pd.DataFrame(rows))
