#!/usr/bin/env python
"""The wall-time forecast of a dry run against the sweep's measured wall time, alone and beside a CPU-bound process.

A 16-trial torch sweep of `search_spaces/digits.yaml` (`--frameworks torch`, one slot, as a user first runs it),
into a throw-away SQLite study in a temporary folder:

0. a warm-up sweep of 4 trials, alone, so that this host's overheads are measured (as after any first sweep);
1. alone: this host's throughput cache cleared, `sweep --dry-run` prints its wall forecast; then the sweep runs,
   its command's wall time measured;
2. loaded: the same, with one CPU-bound process (a Python busy loop) running beside both the dry run and the
   sweep, from before the dry run to the sweep's end.

Target: each forecast within `--max-error` (25%) of its measured wall time. Prints the load average, each
forecast, wall time and ratio, and what the dry run said of the probe; exits 1 on a miss or a failed command.

    .venv/bin/python benchmarks/bench_forecast.py [--trials 16] [--max-error 0.25]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPACE = ROOT / "search_spaces" / "digits.yaml"
HOG = "while True: pass"
UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def sensitivity(folder: Path, *args) -> tuple:
    """(exit code, stdout, stderr, wall seconds) of `sensitivity ARGS` run in `folder`."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=folder,
                          capture_output=True, text=True, timeout=3600)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def forecast_wall(stdout: str) -> float:
    """The wall forecast a dry run printed ("wall 13.9 s on 1 slot"), in seconds."""
    found = re.search(r"wall ([\d.]+) (s|min|h|d) on \d+ slot", stdout)
    if not found:
        raise ValueError(f"no wall forecast in the dry run's output: {stdout[-1000:]}")
    return float(found.group(1)) * UNITS[found.group(2)]


def clear_throughput_cache() -> None:
    """This host's cached probe figures (not its overheads, which the warm-up measured)."""
    from sensitivity.forecast import throughput
    throughput.cache_path().unlink(missing_ok=True)


def one(folder: Path, study: str, trials: int) -> dict:
    """The dry run's forecast and the sweep's wall time, for a fresh study."""
    common = [SPACE, "--frameworks", "torch", "--trials", trials, "--study", study,
              "--storage", f"sqlite:///{folder}/optuna.db"]
    clear_throughput_cache()
    code, out, err, _ = sensitivity(folder, "sweep", *common, "--dry-run")
    if code != 0:
        raise RuntimeError(f"the dry run failed ({code}): {err[-2000:]}")
    notes = [line.removeprefix("note: ") for line in out.splitlines() if line.startswith(("note: probe", "note: load",
                                                                                          "note: overheads"))]
    code, _, err, wall = sensitivity(folder, "sweep", *common, "--no-progress")
    if code != 0:
        raise RuntimeError(f"the sweep failed ({code}): {err[-2000:]}")
    import optuna

    last = optuna.load_study(study_name=study, storage=f"sqlite:///{folder}/optuna.db").user_attrs.get("last_run", {})
    return {"forecast": forecast_wall(out), "wall": wall, "notes": notes, "others": last.get("others_cores")}


def measure(folder: Path, trials: int) -> dict:
    """{"alone": ..., "loaded": ...} (see the module)."""
    code, _, err, _ = sensitivity(folder, "sweep", SPACE, "--frameworks", "torch", "--trials", 4, "--study", "warm-up",
                                  "--storage", f"sqlite:///{folder}/optuna.db", "--no-progress")
    if code != 0:
        raise RuntimeError(f"the warm-up sweep failed ({code}): {err[-2000:]}")
    figures = {"alone": one(folder, "alone", trials)}
    hog = subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True)
    try:
        figures["loaded"] = one(folder, "loaded", trials)
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    return figures


def verdict(figures: dict, max_error: float) -> bool:
    met = True
    for name, fig in figures.items():
        ratio = fig["forecast"] / fig["wall"]
        ok = abs(ratio - 1) <= max_error
        met = met and ok
        during = f" (other processes kept {fig['others']:.1f} cores busy during it)" if fig.get("others") else ""
        print(f"{name}: forecast {fig['forecast']:.1f} s, measured {fig['wall']:.1f} s{during}, ratio {ratio:.2f}; "
              f"target within {max_error:.0%}: {'yes' if ok else 'NO'}")
        for note in fig["notes"]:
            print(f"  the dry run said: {note}")
    return met


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--max-error", type=float, default=0.25)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="bench-forecast-"))
    try:
        figures = measure(folder, args.trials)
    except (RuntimeError, ValueError) as exc:
        print(f"bench_forecast: {exc}")
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min) at the end")
    return 0 if verdict(figures, args.max_error) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
