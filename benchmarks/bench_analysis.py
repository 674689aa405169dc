#!/usr/bin/env python
"""Time the analysis of a stored study as a user waits for it: each command in a fresh process, imports included.

The study is a synthetic one written into the storage (`benchmarks.synthetic`: trials shaped as the
driver stores them, curves, env and stderr tails included; the writing is not timed) unless it exists
there already. Timed, each from a new process: `sensitivity report`, `sensitivity findings` and
`sensitivity export` (parquet), then optuna-dashboard's API listing the storage's studies (/api/studies,
through its WSGI app). The cache of trial tables starts empty (a folder of the run), as after a sweep: the
report reads the study from the storage and caches its table and findings, which `findings` after it
reads; `findings` alone, nothing cached, is timed too (not counted). The report and findings are timed
--repeat times (default 3), each time from an empty cache, and judged by the median of their totals: on a
shared machine one run's wall time moves by a quarter with the load beside it (each run's total and CPU
time are printed, and the load average before it). Each command runs as a user runs it: one process, which
ends as any Python process does. Printed beside, not judged: each command's floor, a process that imports
the libraries the command uses and opens the study, then ends (what no work on the trials can save).
Target (issue 42): that median within 5 s for 10,000 trials and 30 s for 100,000 (--target-s otherwise); the check:
each report is written, each findings print, and print the same alone, the export holds every trial and the
dashboard lists the study. Figures measured: docs/performance.md.
Exits 1 when the target or the check fails.

    .venv/bin/python benchmarks/bench_analysis.py [--trials 10000] [--storage URL] [--study NAME] [--target-s S]
        [--repeat N]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DASHBOARD = """
import io, json, sys, time, wsgiref.util
from optuna_dashboard import wsgi
from sensitivity.studies.storage import open_storage
environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/api/studies", "wsgi.input": io.BytesIO()}
wsgiref.util.setup_testing_defaults(environ)
status = []
body = b"".join(wsgi(open_storage(sys.argv[1], must_exist=True))(environ, lambda s, h, e=None: status.append(s)))
names = [s["study_name"] for s in json.loads(body)["study_summaries"]]
print(status[0], sys.argv[2] in names, len(names))
"""
FLOOR = """
import importlib, sys
import optuna
from sensitivity.studies.storage import open_storage
for name in sys.argv[3:]:
    importlib.import_module(name)
optuna.load_study(study_name=sys.argv[2], storage=open_storage(sys.argv[1], must_exist=True))
"""
# the libraries `report` and `findings` import (the report's importance: scikit-learn): each one's floor
REPORT_IMPORTS = ("sensitivity.cli", "sensitivity.commands.analysis", "sensitivity.analysis.report.page",
                  "sklearn.ensemble")
FINDINGS_IMPORTS = ("sensitivity.cli", "sensitivity.commands.findings")


def target_for(trials: int) -> float:
    """The targets: 5 s for a study of up to 10,000 trials, 30 s beyond (100,000)."""
    return 5.0 if trials <= 10_000 else 30.0


def timed(name: str, command: list, cache) -> tuple:
    """(seconds, stdout) of `command` run in a fresh process with the trial cache in folder `cache` (None: off);
    a failure is reported and counted as missed. The process's CPU time and the load average before it are
    printed beside: on a loaded machine the wall time waits for other processes."""
    env = {**os.environ, "SENSITIVITY_CACHE_DIR": str(cache)} if cache else {**os.environ,
                                                                            "SENSITIVITY_TRIAL_CACHE": "off"}
    load = os.getloadavg()[0]
    begin, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - begin
    failed = "" if proc.returncode == 0 else f"  FAILED (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
    print(f"{name:34s} {seconds:7.2f} s (cpu {_children_cpu() - cpu:6.2f} s, load average {load:4.2f} before)"
          + failed, flush=True)
    return seconds, proc.stdout if proc.returncode == 0 else None


def _children_cpu() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(storage: str, study: str, trials: int, folder: Path, repeat: int = 1) -> dict:
    """Each command from a fresh process: {name: (seconds, stdout or None on failure)}; "pairs": the report
    and findings after it, `repeat` times, each from an empty cache."""
    cli = [sys.executable, "-m", "sensitivity.cli"]
    report = folder / "report.html"
    export = folder / "trials.parquet"
    pairs = []
    for run in range(repeat):
        cache = folder / f"cache-{run}"
        pairs.append((timed("sensitivity report", cli + ["report", study, "--storage", storage, "--out", str(report)],
                            cache),
                      timed("sensitivity findings", cli + ["findings", study, "--storage", storage], cache)))
    return {"pairs": pairs,
            "alone": timed("sensitivity findings, nothing cached", cli + ["findings", study, "--storage", storage],
                           None),
            "export": timed("sensitivity export (parquet)", cli + ["export", study, "--storage", storage,
                                                                   "--format", "parquet", "--out", str(export)], cache),
            "dashboard": timed("optuna-dashboard GET /api/studies", [sys.executable, "-c", DASHBOARD, storage, study],
                               cache),
            "floor": [timed(f"floor of {command}", [sys.executable, "-c", FLOOR, storage, study, *imports], None)
                      for command, imports in (("report", REPORT_IMPORTS), ("findings", FINDINGS_IMPORTS))],
            "files": (report, export)}


def verdict(results: dict, trials: int, target_s: float) -> bool:
    """Print the median total against the target, and the checks; whether all were met."""
    import statistics

    import pandas as pd

    report, export = results["files"]
    pairs = results["pairs"]
    exported = len(pd.read_parquet(export)) if results["export"][1] is not None and export.exists() else None
    dashboard = results["dashboard"][1]
    checks = {"report written": all(r[1] is not None for r, _ in pairs) and report.exists()
              and report.stat().st_size > 0,
              "findings printed": all(bool(f[1]) and any(line.startswith("Findings of")  # after Liu et al.'s line
                                                         for line in f[1].splitlines()[:2]) for _, f in pairs),
              "findings alone print the same": all(results["alone"][1] == f[1] for _, f in pairs),
              f"export holds {trials} trials": exported == trials,
              "dashboard lists the study": bool(dashboard) and dashboard.split()[:3] == ["200", "OK", "True"]}
    for name, ok in checks.items():
        print(f"check: {name}: {'yes' if ok else 'NO'}")
    totals = [r[0] + f[0] for r, f in pairs]
    total = statistics.median(totals)
    met = total <= target_s
    runs = f"median of {len(totals)}: " + ", ".join(f"{t:.2f}" for t in totals) if len(totals) > 1 else "one run"
    print(f"{'report + findings':34s} {total:7.2f} s  ({runs}; target {target_s:g} s: {'met' if met else 'MISSED'})")
    floor = [seconds for seconds, _ in results["floor"]]
    print(f"{'of which before any trial is read':34s} {sum(floor):7.2f} s  (the two floors: interpreter, imports, "
          "the study opened, teardown; not judged)")
    return met and all(checks.values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000, help="trials of the synthetic study (default 10000)")
    parser.add_argument("--storage", help="an RDB URL (default: a new SQLite file in a temporary folder)")
    parser.add_argument("--study", help="default bench-analysis-TRIALS; written there unless it exists")
    parser.add_argument("--target-s", type=float, help="report plus findings, seconds (default: 5 s for 10,000 "
                                                       "trials, 30 s beyond)")
    parser.add_argument("--repeat", type=int, default=3, help="times the report and findings are timed, each from "
                                                              "an empty cache; the median is judged (default 3)")
    args = parser.parse_args(argv)
    target_s = args.target_s if args.target_s is not None else target_for(args.trials)
    study = args.study or f"bench-analysis-{args.trials}"
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        storage = args.storage or f"sqlite:///{tmp}/studies.db"
        from benchmarks import synthetic
        begin = time.perf_counter()
        have = synthetic.trial_count(storage, study)
        if have is None:
            synthetic.write_study(storage, study, args.trials)
            print(f"synthetic study {study}: {args.trials} trials written in {time.perf_counter() - begin:.1f} s "
                  "(not counted)")
        elif have != args.trials:
            parser.error(f"--study {study} holds {have} trials, not --trials {args.trials}")
        results = measure(storage, study, args.trials, Path(tmp), max(1, args.repeat))
        return 0 if verdict(results, args.trials, target_s) else 1


if __name__ == "__main__":
    sys.exit(main())
