#!/usr/bin/env python
"""Memory and dispatch overhead over a long sweep: a real sweep of 300 short trials on a local Ray.

The sweep (digits, MLP, torch, 1 epoch, threads 1, the default sampler) runs into a throw-away SQLite study
as `sensitivity sweep` in a subprocess, while this script samples that driver process with psutil: its
RSS, its open files (num_fds), and its descendants (Ray's processes, the framework workers, the reaper).
Each sample is placed against the trials completed by then, read from the study afterwards (no reads
during the run). Targets:

1. Dispatch overhead flat: the median of the first 50 trials' and of the last 50 (each trial's gap after
   the previous completion on its slot, less its own time in the worker: bench_dispatch's measure; a slot's
   first two trials are left out, its worker starting) in a ratio of at most 1.2.
2. Driver RSS growth at most 50 KiB per trial: the least-squares slope of RSS against trials completed,
   over the samples after the first 50 trials (start-up, imports, Ray's and Tune's first allocations)
   and before the last completion (Tune's end and Ray's shutdown follow it).
3. No growth of open files or processes: over the samples of the last quarter of the trials, the median
   count is at most that of the first quarter (from the first completion on: everything started) plus a
   small slack (--fd-slack, --process-slack; medians, so a process that lives a moment is not counted).

Exits 1 when a target is missed or the sweep fails.

    .venv/bin/python benchmarks/bench_long_sweep.py [--trials 300] [--parallel 1] [--interval 0.5]
"""
from __future__ import annotations

import argparse
import bisect
import datetime
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import psutil

from bench_dispatch import finished_trials, gaps, sweep_command

KINDS = ("ray", "workers", "reaper", "zombies")  # the driver's descendants, told apart by command line


def kind(process: psutil.Process) -> str:
    try:
        command = " ".join(process.cmdline())
    except psutil.ZombieProcess:
        return "zombies"
    if "sensitivity.trial.worker" in command:
        return "workers"  # a framework worker of a Ray actor
    return "reaper" if "sensitivity.ray_cluster" in command else "ray"


def sample(driver: psutil.Process) -> dict:
    """The driver's RSS (bytes), open files and descendants by kind, now (naive local time, as Optuna's)."""
    with driver.oneshot():
        row = {"time": datetime.datetime.now(), "rss": driver.memory_info().rss, "fds": driver.num_fds()}
    row.update(dict.fromkeys(KINDS, 0))
    for child in driver.children(recursive=True):
        try:
            row[kind(child)] += 1
        except psutil.NoSuchProcess:
            pass
    row["processes"] = sum(row[k] for k in KINDS)
    return row


def measure(folder: Path, trials: int, parallel: int, epochs: int, interval_s: float) -> tuple:
    """Run the sweep while sampling its driver every `interval_s` s: (trials by completion, samples)."""
    command = sweep_command(folder, "long", f"{{epochs: {epochs}, threads: 1}}", trials, parallel)
    with open(folder / "sweep.log", "w+") as log:
        proc = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT)
        driver, samples = psutil.Process(proc.pid), []
        while proc.poll() is None:
            try:
                samples.append(sample(driver))
            except psutil.NoSuchProcess:  # the driver has just ended
                break
            time.sleep(interval_s)
        proc.wait()
        log.seek(0)
        return finished_trials(folder, "long", proc.returncode, log.read()), samples


def overheads(trials: list) -> tuple:
    """Each trial's dispatch overhead and the part of it before its ask (the previous completion on its slot
    to its start: Tune's loop and the searcher's ask), in order of completion, per slot (a Ray actor,
    `env.ray_actor_pid`) from its third trial on; the number of slots the sweep used."""
    slots: dict = {}
    for trial in trials:
        slots.setdefault(trial.user_attrs["env"]["ray_actor_pid"], []).append(trial)
    paired = sorted((b.datetime_complete, gap, (b.datetime_start - a.datetime_complete).total_seconds())
                    for slot in slots.values() for a, b, gap in zip(slot[1:], slot[2:], gaps(slot[1:])))
    return [gap for _, gap, _ in paired], [ask for _, _, ask in paired], len(slots)


def figures(trials: list, samples: list, warmup: int, window: int) -> dict:
    done = [t.datetime_complete for t in trials]
    for row in samples:
        row["completed"] = bisect.bisect_right(done, row["time"])
    n = len(trials)
    per_trial, asking, slots = overheads(trials)
    first, last = statistics.median(per_trial[:window]), statistics.median(per_trial[-window:])
    ask = (statistics.median(asking[:window]), statistics.median(asking[-window:]))
    fitted = [r for r in samples if warmup <= r["completed"] < n]
    slope = (statistics.linear_regression([r["completed"] for r in fitted], [r["rss"] for r in fitted]).slope
             if len({r["completed"] for r in fitted}) >= 2 else float("nan"))
    quarters = ([r for r in samples if 1 <= r["completed"] <= n // 4],
                [r for r in samples if n - n // 4 <= r["completed"] < n])
    counts = {key: [(statistics.median(r[key] for r in q), max(r[key] for r in q)) if q else (float("nan"),) * 2
                    for q in quarters] for key in ("fds", "processes", *KINDS)}
    blocks = [statistics.median(per_trial[i:i + window]) for i in range(0, len(per_trial), window)]
    return {"trials": n, "slots": slots, "first": first, "last": last, "ratio": last / first, "blocks": blocks,
            "ask": ask, "overheads": len(per_trial), "rss_slope_kib": slope / 1024, "samples": len(samples),
            "fitted": len(fitted), "rss_mb": [r["rss"] / 2**20 for r in (fitted[:1] + fitted[-1:])], "counts": counts}


def verdict(fig: dict, args) -> bool:
    """Print the figures against their targets; whether every target is met."""
    ratio_ok = fig["ratio"] <= args.max_ratio
    print(f"dispatch overhead per trial ({fig['overheads']} trials on {fig['slots']} slot(s)): median of the first "
          f"{args.window} {fig['first']:.3f} s, of the last {args.window} {fig['last']:.3f} s; ratio "
          f"{fig['ratio']:.2f}x; target <= {args.max_ratio:g}x: {'yes' if ratio_ok else 'NO'}")
    print(f"  median of each {args.window} trials in turn: " + ", ".join(f"{m:.3f}" for m in fig["blocks"]) + " s; "
          f"of which before the trial's ask (Tune's loop, the searcher's ask): {fig['ask'][0]:.3f} s first, "
          f"{fig['ask'][1]:.3f} s last")
    rss_ok = fig["rss_slope_kib"] <= args.max_rss_kib  # a NaN slope (too few samples) is a miss
    start, end = (fig["rss_mb"] + [float("nan")] * 2)[:2]
    print(f"driver RSS growth: {fig['rss_slope_kib']:.1f} KiB per trial (slope over {fig['fitted']} of "
          f"{fig['samples']} samples, trials {args.warmup} to {fig['trials']}; RSS {start:.0f} -> {end:.0f} MiB); "
          f"target <= {args.max_rss_kib:g} KiB: {'yes' if rss_ok else 'NO'}")
    met = ratio_ok and rss_ok
    for key, slack in (("fds", args.fd_slack), ("processes", args.process_slack)):
        (first, first_max), (last, last_max) = fig["counts"][key]
        ok = last <= first + slack  # a NaN (a quarter without samples) is a miss
        met = met and ok
        print(f"driver's {'open files' if key == 'fds' else 'descendant processes'}: median {first:g} (max "
              f"{first_max:g}) in the first quarter of the trials, {last:g} (max {last_max:g}) in the last; "
              f"no growth (last <= first + {slack}): {'yes' if ok else 'NO'}")
    print("  processes by kind, first -> last quarter (median): " + ", ".join(
        f"{k} {fig['counts'][k][0][0]:g} -> {fig['counts'][k][1][0]:g}" for k in KINDS))
    return met


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=1, help="concurrent trials (default 1: the overhead of "
                        "one slot, not shared with a second trial on this machine's two cores)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples of the driver")
    parser.add_argument("--window", type=int, default=50, help="trials compared at each end (default 50)")
    parser.add_argument("--warmup", type=int, default=50, help="trials before the RSS slope is fitted (default 50)")
    parser.add_argument("--max-ratio", type=float, default=1.2, help="target: last/first median overhead (1.2)")
    parser.add_argument("--max-rss-kib", type=float, default=50.0, help="target: RSS growth per trial (50 KiB)")
    parser.add_argument("--fd-slack", type=int, default=4, help="open files the last quarter may add (4)")
    parser.add_argument("--process-slack", type=int, default=0, help="processes the last quarter may add (0)")
    args = parser.parse_args(argv)
    if args.trials < 2 * args.window + 4 or args.warmup >= args.trials - 1:
        parser.error(f"--trials {args.trials}: need at least 2 x --window + 4 and more than --warmup + 1")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="bench-long-sweep-") as tmp:
        started = time.monotonic()
        trials, samples = measure(Path(tmp), args.trials, args.parallel, args.epochs, args.interval)
        print(f"{len(trials)} trials, parallel {args.parallel}, in {time.monotonic() - started:.0f} s; median "
              f"{statistics.median(t.user_attrs['wall_time_s'] for t in trials):.2f} s in the worker")
    met = verdict(figures(trials, samples, args.warmup, args.window), args)
    print("all targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
