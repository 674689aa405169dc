#!/usr/bin/env python
"""The share of a job's trial slots spent training: per study (a stage of the main job), the trials' train time
over the slot-seconds the stage held, slots x (the last trial's end - the first trial's start); and over the
stages that train together, from the first trial's start to the last trial's end, the time between stages
(starting processes and workers, planning) counted.

A stage that waits for its slowest trial, or starts its workers, holds its slots without training. The timing
study (`*-alone`) is left out, and where it runs between stages, the time from the trial before its first to the
trial after its last: it keeps one slot idle on purpose, so that each run is alone. Robustness and the report run
no trial and come after the last. Target (issue 42): training at least `--target` (0.75) of the slot-seconds of
the stages that train, between stages included; exit 1 on a miss.

    .venv/bin/python benchmarks/bench_training_share.py --storage sqlite:///results/optuna.db [--prefix main-]
        [--slots 2] [--wall SECONDS]
"""
from __future__ import annotations

import argparse
import sys


def stage_shares(storage: str, prefix: str, slots: int) -> tuple:
    """([(study, trials, train seconds, window seconds, slot-seconds, share, [the studies whose windows overlap
    its own])] of the storage's studies named `prefix`..., the timing studies left out, in the order their first
    trial started; the seconds from the first trial's start to the last one's end, less the timing studies' gaps)."""
    import optuna
    from optuna.trial import TrialState

    out, timing = [], []
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        name = summary.study_name
        if not name.startswith(prefix):
            continue
        trials = [t for t in optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)
                  if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)
                  and t.datetime_start and t.datetime_complete]
        if not trials:
            continue
        start, end = min(t.datetime_start for t in trials), max(t.datetime_complete for t in trials)
        if name.endswith("-alone"):
            timing.append((start, end))
            continue
        window = (end - start).total_seconds()
        train = sum(float(t.user_attrs.get("train_time_s") or 0.0) for t in trials)
        held = slots * window
        out.append((start, end, name, len(trials), train, window, held, train / held if held else 0.0))
    out.sort()
    span = (max(r[1] for r in out) - out[0][0]).total_seconds() if out else 0.0
    for start, end in timing:  # the gap around a timing study between stages: from the stage before to the one after
        before = max((r[1] for r in out if r[1] <= start), default=None)
        after = min((r[0] for r in out if r[0] >= end), default=None)
        if before is not None and after is not None:  # one after every stage lies outside the span already
            span -= (after - before).total_seconds()
    rows = [(*row[2:], [other[2] for other in out if other is not row and other[0] < row[1] and row[0] < other[1]])
            for row in out]
    return rows, span


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--storage", required=True)
    p.add_argument("--prefix", default="main-")
    p.add_argument("--slots", type=int, default=2, help="trials the job runs side by side (default 2)")
    p.add_argument("--wall", type=float, help="the job's whole wall time in seconds, if known")
    p.add_argument("--target", type=float, default=0.75)
    args = p.parse_args(argv)
    rows, span = stage_shares(args.storage, args.prefix, args.slots)
    if not rows:
        print(f"no study named {args.prefix}... with finished trials in {args.storage}", file=sys.stderr)
        return 1
    print(f"{'stage (study)':<48} {'trials':>6} {'train s':>8} {'window s':>9} {'slot-s':>8} {'share':>6}  beside")
    for name, n, train, window, held, share, beside in rows:
        print(f"{name:<48} {n:>6} {train:>8.1f} {window:>9.1f} {held:>8.1f} {share:>6.1%}  {', '.join(beside)}")
    if any(row[6] for row in rows):
        print("(a stage beside others shared its window's slots with them: its share is of slots it did not hold "
              "alone)")
    train, held = sum(r[2] for r in rows), sum(r[4] for r in rows)
    print(f"{'the stages, each its own window':<48} {sum(r[1] for r in rows):>6} {train:>8.1f} {'':>9} {held:>8.1f} "
          f"{train / held:>6.1%}")
    share = train / (args.slots * span)
    print(f"{'the stages, the time between them counted':<48} {'':>6} {train:>8.1f} {span:>9.1f} "
          f"{args.slots * span:>8.1f} {share:>6.1%}")
    if args.wall:
        whole = train / (args.slots * args.wall)
        print(f"over the job's wall time ({args.wall:.0f} s x {args.slots} slots): {whole:.1%} (timing, robustness "
              "and the report counted too)")
    ok = share >= args.target
    print(f"target: training at least {args.target:.0%} of the training stages' slot-seconds, between stages "
          f"included: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
