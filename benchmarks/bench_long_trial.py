#!/usr/bin/env python
"""One trial of thousands of cheap epochs: what its reports cost the driver and Ray Tune's folder, per epoch.

A real sweep of one trial (digits, MLP, torch, one thread, a batch that makes each epoch one step, 5,000 epochs
by default) runs in this process, into a throw-away SQLite study in a temporary folder (the current folder for
the run, so that Ray Tune's files land there whichever revision runs). Each epoch's report reaches the driver's
searcher (`StudySearcher.on_trial_result`), where this script notes the driver process's CPU time (every thread:
Tune's loop, Ray's, the searcher's, the storage's; less this script's own noting) and the bytes of the report as
Tune's JSON logger writes it (`json.dumps`, what Tune keeps, sends and logs of the epoch). Targets, from the first
`--window` epochs to the last `--window`:

1. the driver's CPU seconds per epoch grow by at most `--max-growth` (1.5) times;
2. the bytes of each epoch's report grow by at most `--max-growth` times.

Also printed: the bytes under the folder's `results/ray-tune` once Tune's run has ended (before a revision that
removes them does), the run's wall time and the trial's own train time.
Also printed: the bytes of Tune's folder at the trial's end, the run's wall time and the trial's own train time.
Exits 1 when a target is missed or the sweep fails. Run it alone (it times the driver):

    .venv/bin/python benchmarks/bench_long_trial.py [--epochs 5000] [--window 500]
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import shutil
import os
import sys
import tempfile
import time
from pathlib import Path

SPACE = """study: long-trial
dataset: digits
model: mlp
frameworks: [torch]
parameters: {{lr: {{type: categorical, choices: [0.05]}}}}
fixed: {{epochs: {epochs}, batch_size: 1024, threads: 1, momentum: 0.9}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
val_fraction: 0.2
"""


def folder_bytes(root: Path) -> int:
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:  # removed meanwhile
                pass
    return total


def measure(folder: Path, epochs: int, window: int) -> dict:
    """Run the one-trial sweep in `folder` (made the current folder) and note, at each epoch's report, the
    driver's CPU time and the bytes of its report. Figures by epoch."""
    from sensitivity.sweep import searcher as searcher_module
    from sensitivity.sweep.driver import SweepOptions, run_sweep

    os.chdir(folder)
    (folder / "space.yaml").write_text(SPACE.format(epochs=epochs))
    tune_root = folder / "results" / "ray-tune"
    cpu, sent, end = {}, {}, {}
    noting = [0.0]  # CPU seconds this script spent noting: taken off the driver's
    on_result = searcher_module.StudySearcher.on_trial_result

    def noted_result(self, trial_id, result):
        on_result(self, trial_id, result)
        if not result.get("final") and result.get("epoch") is not None:
            tick = time.process_time()
            epoch = int(result["epoch"])
            cpu[epoch] = tick - noting[0]
            sent[epoch] = len(json.dumps(result, default=str))
            noting[0] += time.process_time() - tick

    def measured_before(remove):
        def noted_remove(*args, **kwargs):
            end["tune_bytes"] = folder_bytes(tune_root)
            return remove(*args, **kwargs)
        return noted_remove

    if importlib.util.find_spec("sensitivity.sweep.tune_files"):  # a revision that removes Tune's folder after
        tune_files = importlib.import_module("sensitivity.sweep.tune_files")
        tune_files.remove_run = measured_before(tune_files.remove_run)
    searcher_module.StudySearcher.on_trial_result = noted_result
    started = time.perf_counter()
    summary = run_sweep(folder / "space.yaml", SweepOptions(trials=1, storage=f"sqlite:///{folder}/results/optuna.db",
                                                            progress=False))
    wall = time.perf_counter() - started
    import optuna

    (trial,) = optuna.load_study(study_name="long-trial", storage=f"sqlite:///{folder}/results/optuna.db").trials
    left = folder_bytes(tune_root)
    return {"cpu": cpu, "sent": sent, "end_bytes": end.get("tune_bytes", left), "wall_s": wall,
            "train_s": trial.user_attrs.get("train_time_s"), "status": trial.user_attrs.get("status"),
            "final": summary["final_trials"], "left_bytes": left,
            "curve": len(trial.user_attrs.get("curve") or [])}


def per_epoch(figure: dict, start: int, stop: int) -> float:
    return (figure[stop] - figure[start]) / (stop - start)


def growth(first: float, last: float) -> float:
    """last / first; no cost at either end is no growth."""
    if last <= 0:
        return 0.0
    return last / first if first > 0 else float("inf")


def verdict(fig: dict, epochs: int, window: int, max_growth: float) -> bool:
    """Print the figures against their targets; whether every target is met."""
    ran = fig["status"] == "ok" and fig["curve"] == epochs
    print(f"one trial of {epochs} epochs: status {fig['status']}, {fig['curve']} epochs in its curve; wall "
          f"{fig['wall_s']:.1f} s, train {fig['train_s'] or 0:.1f} s")
    a, b, c, d = 1, 1 + window, epochs - 1 - window, epochs - 1
    missing = [e for e in (a, b, c, d) if e not in fig["cpu"]]
    if missing:
        print(f"no report seen at epochs {missing}: the sweep did not run its trial")
        return False
    cpu_first, cpu_last = per_epoch(fig["cpu"], a, b), per_epoch(fig["cpu"], c, d)
    bytes_first = sum(fig["sent"][e] for e in range(a + 1, b + 1)) / (b - a)
    bytes_last = sum(fig["sent"][e] for e in range(c + 1, d + 1)) / (d - c)
    cpu_growth, bytes_growth = growth(cpu_first, cpu_last), growth(bytes_first, bytes_last)
    cpu_ok, bytes_ok = cpu_growth <= max_growth, bytes_growth <= max_growth
    print(f"driver CPU per epoch: {cpu_first * 1000:.2f} ms over epochs {a}-{b}, {cpu_last * 1000:.2f} ms over "
          f"{c}-{d}; growth {cpu_growth:.2f}x; target <= {max_growth:g}x: {'yes' if cpu_ok else 'NO'}")
    print(f"bytes of an epoch's report to Tune: {bytes_first:,.0f} over epochs {a}-{b}, {bytes_last:,.0f} over "
          f"{c}-{d}; growth {bytes_growth:.2f}x; target <= {max_growth:g}x: {'yes' if bytes_ok else 'NO'}")
    print(f"Ray Tune's folder: {fig['end_bytes']:,} bytes when its run ended ({fig['end_bytes'] / epochs:,.0f} per "
          f"epoch), {fig['left_bytes']:,} left after the command")
    return ran and cpu_ok and bytes_ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5000)
    parser.add_argument("--window", type=int, default=500, help="epochs at the start and at the end compared")
    parser.add_argument("--max-growth", type=float, default=1.5)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)
    if args.epochs < 2 * args.window + 2:
        parser.error("--epochs must be at least twice --window plus 2")
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-long-trial-"))
    here = os.getcwd()
    try:
        fig = measure(folder, args.epochs, args.window)
    finally:
        os.chdir(here)
        if args.keep:
            print(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0 if verdict(fig, args.epochs, args.window, args.max_growth) else 1


if __name__ == "__main__":
    sys.exit(main())
