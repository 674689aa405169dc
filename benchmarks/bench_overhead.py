#!/usr/bin/env python
"""What a trial costs besides its training, per framework: the worker's cold start, the steady overhead of a
trial in a sweep, the time between trials, and whether a second sweep on the same cluster starts workers.

What runs for real: a local Ray head (`ray start`, loopback), two sweeps in turn joining it (`sensitivity sweep
--address`), each of `--trials` trials of one framework on digits (the MLP, 1 epoch), `--parallel` at once, into
one SQLite study file. From the stored trials, per framework:
- cold start: the worker's span in the first sweep's trials that started their worker, less the median span of
  the trials that did not (the worker's start, the framework's import, its first build);
- steady overhead: the median of span minus train time over the warm trials of both sweeps (span: Optuna's
  start to completion of the trial: Tune's actor, the keeper's lending, data load, evaluation, the tell);
- between trials: the median gap on one slot from a trial's completion to the next one's start;
- the second sweep's start-ups: its trials that started a worker (the keeper's workers outlive a command).
With --main-db, the main job's studies in that storage: its cold starts per framework and slot over the job.

Targets (issue 31, this 2-core machine): the second sweep starts no worker; steady overhead at most 0.15 s a
trial for torch; the main job's cold starts at most one per framework and slot. The driver's rate at 10,000
trials on PostgreSQL is benchmarks/bench_scale.py's. Exits 1 on a miss.

    .venv/bin/python benchmarks/bench_overhead.py [--frameworks torch,tensorflow,mxnet] [--trials 6]
        [--parallel 2] [--main-db sqlite:///results/optuna.db]
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
STEADY_TARGET_S = {"torch": 0.15}
SPACE = """study: {study}
dataset: digits
model: mlp
frameworks: [{framework}]
parameters: {{lr: {{type: float, low: 0.01, high: 0.1, log: true}}}}
fixed: {{epochs: 1}}
objectives: [{{metric: val_accuracy, direction: maximize}}]
"""


def start_head(folder: Path) -> tuple:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen([str(BIN / "ray"), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                             "--port", str(port), "--include-dashboard", "false", "--num-cpus", str(os.cpu_count()),
                             "--temp-dir", str(folder / "r")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return head, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    raise SystemExit("bench_overhead: the Ray head did not start")


def sweep(folder: Path, framework: str, study: str, address: str, db: str, trials: int, parallel: int) -> float:
    space = folder / f"{study}.yaml"
    space.write_text(SPACE.format(study=study, framework=framework))
    started = time.perf_counter()
    proc = subprocess.run([str(BIN / "sensitivity"), "sweep", str(space), "--trials", str(trials), "--parallel",
                           str(parallel), "--address", address, "--storage", db, "--no-progress"], cwd=folder,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"bench_overhead: the sweep {study} failed: {proc.stderr.strip()[-500:]}")
    return time.perf_counter() - started


def figures(db: str, studies: list) -> dict:
    import optuna  # lazy: the driver's package
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    trials = {s: [t for t in optuna.load_study(study_name=s, storage=db).trials if t.state.name == "COMPLETE"]
              for s in studies}
    worker = {s: [t.user_attrs["env"]["worker"] for t in ts] for s, ts in trials.items()}
    first = worker[studies[0]]
    warm_span = statistics.median([w["span_s"] for ts in worker.values() for w in ts if not w["cold"]] or [0.0])
    cold = [w["span_s"] - warm_span for w in first if w["cold"]]
    everything = [t for ts in trials.values() for t in ts]
    steady = [(t.datetime_complete - t.datetime_start).total_seconds() - t.user_attrs["train_time_s"]
              for t, w in zip(everything, [w for ts in worker.values() for w in ts]) if not w["cold"]]
    gaps = []
    for ts in trials.values():
        by_slot = {}
        for t in sorted(ts, key=lambda t: t.datetime_start):
            by_slot.setdefault(t.user_attrs["env"]["ray_actor_pid"], []).append(t)
        for run in by_slot.values():
            gaps += [(b.datetime_start - a.datetime_complete).total_seconds() for a, b in zip(run, run[1:])]
    return {"cold_s": statistics.median(cold) if cold else None, "colds": len(cold),
            "steady_s": statistics.median(steady) if steady else None,
            "between_s": statistics.median(gaps) if gaps else None,
            "second_starts": sum(w["cold"] for w in worker[studies[1]])}


def main_job_starts(db: str) -> dict:
    """{framework: cold starts} over every main-job study in `db` whose trials record their workers."""
    import optuna  # lazy: the driver's package
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    starts = {}
    for summary in optuna.get_all_study_summaries(db):
        if not summary.study_name.startswith("main-"):
            continue
        for t in optuna.load_study(study_name=summary.study_name, storage=db).trials:
            worker = (t.user_attrs.get("env") or {}).get("worker")
            if worker is None:
                continue
            framework = t.user_attrs["spec"]["framework"]
            starts[framework] = starts.get(framework, 0) + worker["cold"]
    return starts


def stop_head(head) -> None:
    """End the Ray head and everything it started (its own process group), and reap it."""
    try:
        os.killpg(head.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    head.wait()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="torch,tensorflow,mxnet")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--main-db", help="a storage holding the main job's studies")
    parser.add_argument("--main-slots", type=int, default=2, help="the main job's trial slots (its --parallel)")
    args = parser.parse_args(argv)
    misses = []
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o700)
        head, address = start_head(folder)
        try:
            db = f"sqlite:///{folder}/s.db"
            print(f"{'framework':<11} {'cold start':>10} {'colds':>5} {'steady/trial':>12} {'between':>8} "
                  f"{'2nd sweep starts':>16} {'sweeps (s)':>14}")
            for framework in [f for f in args.frameworks.split(",") if f]:
                walls = [sweep(folder, framework, f"{framework}-{i}", address, db, args.trials, args.parallel)
                         for i in (1, 2)]
                f = figures(db, [f"{framework}-1", f"{framework}-2"])
                show = (lambda v: "-" if v is None else f"{v:.3f}")  # noqa: E731
                print(f"{framework:<11} {show(f['cold_s']):>10} {f['colds']:>5} {show(f['steady_s']):>12} "
                      f"{show(f['between_s']):>8} {f['second_starts']:>16} {walls[0]:>6.1f} {walls[1]:>6.1f}")
                if f["second_starts"]:
                    misses.append(f"{framework}: the second sweep started {f['second_starts']} worker(s); target 0")
                target = STEADY_TARGET_S.get(framework)
                if target is not None and (f["steady_s"] is None or f["steady_s"] > target):
                    misses.append(f"{framework}: steady overhead {show(f['steady_s'])} s a trial; target {target} s")
        finally:
            stop_head(head)
    if args.main_db:
        for framework, starts in sorted(main_job_starts(args.main_db).items()):
            print(f"main job, {framework}: {starts} cold start(s) on {args.main_slots} slot(s)")
            if starts > args.main_slots:
                misses.append(f"main job, {framework}: {starts} cold starts on {args.main_slots} slots; target one "
                              "per slot")
    for miss in misses:
        print(f"MISS {miss}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
