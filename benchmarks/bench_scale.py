#!/usr/bin/env python
"""The driver at simulated scale: completions per second it sustains with 1,000 trials in flight.

What runs for real: the driver's searcher (`StudySearcher`) as Ray Tune calls it: `suggest` (the study's ask,
seed siblings queued, the surplus check), `on_trial_result` for each epoch (intermediate values), and
`on_trial_complete` (the trial log line, every TrialResult field as a user attribute, the tell); the
driver's heartbeat thread; `recover` when the study is opened; Optuna's storage: SQLite, a journal file,
PostgreSQL; the samplers random, qmc, tpe (the default) and nsga2.
What is simulated: Ray Tune and the trials. 1,000 trials are held live in the driver as Tune holds them;
each completes with a synthetic TrialResult as large as a real one (10-epoch curve, env record, stderr tail)
and sends its 10 epoch results first. Not exercised: Tune's event loop and bookkeeping, Ray's scheduling,
actors and the results' transport, which on this 2-core machine cannot host 1,000 workers.

The driver is driven flat out (each completion handed over as soon as the previous one is served), so
the rate measured is where rising completion rates make it fall behind. The studies are pre-filled to
1,000, 10,000 or 100,000 trials with `benchmarks.synthetic` (not timed; a journal is pre-filled only
to 1,000, by copying; the samplers share a study, each run adding its trials). Per storage, sampler and
size: sustained completions/s, the driver's CPU seconds and RSS growth per 1,000 completions, the time to
open the study (recover, count), and the burst of asks that first fills the --concurrent slots. Target (the issue's): PostgreSQL, default sampler: >= 50/s at 10,000 trials, >= 20/s at
100,000. Exits 1 when a target measured is missed.

    .venv/bin/python benchmarks/bench_scale.py --storage postgresql://... [--samplers tpe,random] [--sizes 1000,10000]
        [--completions 300] [--concurrent 1000]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGETS = {10_000: 50.0, 100_000: 20.0}  # PostgreSQL, default sampler: study size -> completions/s
DEFAULT_SAMPLER = "tpe"


def result_of(trial_number: int, spec: dict, epochs: int = 10) -> tuple:
    """(epoch results, final result) as the trainable reports them, for a synthetic trial."""
    from benchmarks import synthetic

    accuracy = 0.9 + (trial_number % 97) / 1000
    curve = [{"epoch": e, "train_loss": 2.3 * (1 - accuracy * e / epochs), "val_accuracy": accuracy * e / epochs,
              "test_accuracy": accuracy * e / epochs - 0.003, "seconds": 60.0 / epochs} for e in range(1, epochs + 1)]
    epochs_results = [{"epoch": c["epoch"], "val_accuracy": c["val_accuracy"], "accuracy": c["test_accuracy"],
                       "loss": c["train_loss"], "train_time_s": 6.0 * c["epoch"], "point_json": json.dumps(c)}
                      for c in curve]
    payload = {"status": "ok", "reason": "", "accuracy": accuracy - 0.003, "val_accuracy": accuracy,
               "loss": curve[-1]["train_loss"], "curve": curve, "setup_time_s": 4.5, "compile_time_s": 0.0,
               "train_time_s": 60.0, "test_time_s": 0.5, "wall_time_s": 66.0, "throughput": 9000.0,
               "peak_rss_mb": 700.0, "cpu_percent": 95.0, "gpu": None, "flops_per_s": 1.3e10, "params": 431080,
               "steps": 8440, "stderr_tail": synthetic.TF_WARNING, "spec": spec,
               "env": synthetic._env(spec["framework"], "2.13.0", spec["seed"], trial_number)}
    final = {**epochs_results[-1], "final": True, "result_json": json.dumps(payload)}
    return epochs_results, final


def open_study(url: str, name: str, size: int, sampler: str, folder: Path):
    """The study `name` with at least `size` trials, opened as the driver opens it: (study, space, seconds)."""
    import optuna

    from sensitivity.config.spaces import Space
    from benchmarks import synthetic
    from sensitivity.sweep.samplers import make_sampler
    from sensitivity.sweep.driver_storage import driver_view
    from sensitivity.studies.storage import open_storage

    space = Space.model_validate({**synthetic.SPACE, "study": name})
    if url.startswith("journal:"):
        source = f"sqlite:///{folder}/prefill.db"
        if size and name not in optuna.get_all_study_names(open_storage(url)):
            synthetic.write_study(source, name, size)
            optuna.copy_study(from_study_name=name, from_storage=source, to_storage=open_storage(url))
    elif (synthetic.trial_count(url, name) or 0) < size:
        synthetic.write_study(url, name, size - (synthetic.trial_count(url, name) or 0))
    begin = time.perf_counter()
    study = optuna.create_study(study_name=name, storage=driver_view(open_storage(url)), direction="maximize",
                                sampler=make_sampler(sampler, space, 0), load_if_exists=True)
    return study, space, time.perf_counter() - begin


def drive(url: str, study, space, completions: int, concurrent: int, log_dir: Path) -> dict:
    """Open, fill `concurrent` slots, then serve `completions` completions flat out; the figures."""
    import psutil

    from sensitivity.sweep.driver import _start_heartbeat
    from sensitivity.studies.records import count_final
    from sensitivity.sweep.recovery import recover
    from sensitivity.sweep.searcher import StudySearcher

    me = psutil.Process()
    driver_id = uuid.uuid4().hex[:12]
    begin = time.perf_counter()
    stop_beating = _start_heartbeat(study, driver_id, url)
    try:
        recover(study, driver_id)
        target = count_final(study) + completions + 2 * concurrent
        opened = time.perf_counter() - begin
        searcher = StudySearcher(study, space, driver_id, target, {"timeout": None, "threads": 1},
                                 log_path=log_dir / f"{study.study_name}.jsonl")
        begin = time.perf_counter()
        specs = {}
        for slot in range(concurrent):
            specs[f"t{slot}"] = searcher.suggest(f"t{slot}")["spec"]
        burst = time.perf_counter() - begin
        cpu, rss, begin = me.cpu_times(), me.memory_info().rss, time.perf_counter()
        for done in range(completions):
            trial_id = f"t{done}"
            epochs, final = result_of(done, specs.pop(trial_id))
            for result in epochs:
                searcher.on_trial_result(trial_id, result)
            searcher.on_trial_complete(trial_id, final)
            new_id = f"t{concurrent + done}"
            specs[new_id] = searcher.suggest(new_id)["spec"]
        seconds = time.perf_counter() - begin
        used = me.cpu_times()
        figures = {"open_s": opened, "burst_s": burst, "rate": completions / seconds,
                   "cpu_per_1000_s": 1000 * (used.user + used.system - cpu.user - cpu.system) / completions,
                   "rss_per_1000_mb": 1000 * (me.memory_info().rss - rss) / completions / 2**20,
                   "rss_mb": me.memory_info().rss / 2**20}
        end_live(study, searcher)
        return figures
    finally:
        stop_beating()


def end_live(study, searcher) -> None:
    """The trials still in flight told FAIL as surplus: not counted, and not queued again as a driver's
    interrupted trials are, so the next run (another sampler on the same study) samples rather than pops."""
    from optuna.trial import TrialState

    for trial in searcher.live.values():
        trial.set_user_attr("surplus", True)
        trial.set_user_attr("reason", "not run: the benchmark ended")
        study.tell(trial, state=TrialState.FAIL)
    searcher.live.clear()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", action="append", required=True,
                        help="sqlite:///FILE, journal:FILE or postgresql://...; repeatable")
    parser.add_argument("--samplers", default="tpe,random,qmc,nsga2")
    parser.add_argument("--sizes", default="1000,10000,100000", help="study sizes before the run")
    parser.add_argument("--completions", type=int, default=300, help="completions timed per run")
    parser.add_argument("--concurrent", type=int, default=1000, help="trials in flight")
    parser.add_argument("--prefix", default="bench-scale", help="study names: PREFIX-SIZE (the samplers share "
                                                                 "it: each run adds its trials)")
    args = parser.parse_args(argv)
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sizes = [int(s) for s in args.sizes.split(",")]
    met = True
    print(f"{'storage':<11}{'sampler':<8}{'trials':>8}{'open s':>8}{'burst s':>12}{'compl/s':>9}"
          f"{'cpu s/1k':>10}{'rss MB/1k':>10}  target")
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for url in args.storage:
            kind = url.split(":", 1)[0]
            for size in sizes:
                if kind == "journal" and size > 1000:
                    print(f"{kind:<11}{'*':<8}{size:>8}  not run: a journal is pre-filled only to 1,000 trials")
                    continue
                for sampler in args.samplers.split(","):
                    name = f"{args.prefix}-{size}"
                    study, space, load_s = open_study(url, name, size, sampler, Path(tmp))
                    f = drive(url, study, space, args.completions, args.concurrent, Path(tmp))
                    target = TARGETS.get(size) if kind == "postgresql" and sampler == DEFAULT_SAMPLER else None
                    verdict = "" if target is None else f">= {target:g}/s: {'met' if f['rate'] >= target else 'MISSED'}"
                    met &= target is None or f["rate"] >= target
                    print(f"{kind:<11}{sampler:<8}{size:>8}{load_s + f['open_s']:8.1f}{f['burst_s']:12.1f}"
                          f"{f['rate']:9.1f}{f['cpu_per_1000_s']:10.1f}{f['rss_per_1000_mb']:10.1f}  {verdict}",
                          flush=True)
    print("all targets met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
