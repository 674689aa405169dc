"""`sensitivity timing`: a sweep's chosen configurations timed again one at a time, pinned to one core, on fresh
seeds."""
from __future__ import annotations

from sensitivity.commands.common import UsageError, load_study, number
from sensitivity.commands.launch import add_run_options, check_study_name, sweep_options, run_command
from sensitivity.config.spaces import MAX_SEEDS
from sensitivity.experiments.timing import TimingError, timing_plan
from sensitivity.sweep.driver import SweepError, check_inputs, run_space
from sensitivity.sweep.plans import defaults_space


def add_parsers(commands) -> None:
    p = commands.add_parser("timing", help="run a sweep's chosen configurations again one at a time, pinned to one "
                                           "core, on fresh seeds: their times alone and their test accuracy "
                                           "free of the choice")
    p.add_argument("sweep", help="the sweep study whose configurations are timed")
    p.add_argument("--configs", type=number(int, 0, strict=True, maximum=100), default=1,
                   help="the best configurations per framework on validation (default 1: the one chosen)")
    p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS), default=3,
                   help="fresh seeds each, after the sweep's largest (default 3)")
    add_run_options(p)
    p.set_defaults(handler=_cmd_timing, parallel=1)


def _cmd_timing(args) -> int:
    check_study_name(args.study, "timing")
    if args.parallel != 1:
        raise UsageError(f"sensitivity timing: --parallel {args.parallel}: it times each configuration alone: 1")
    sweep = load_study("timing", args.sweep, args.storage)
    try:
        plan, frameworks, regimes, dataset = timing_plan(sweep, args.configs, args.seeds)
    except TimingError as exc:
        raise UsageError(f"sensitivity timing: {exc}")
    args.study = args.study or f"{args.sweep}-alone"
    space = defaults_space(args.study, frameworks, [dataset], 1, regimes)
    try:
        check_inputs(space, sweep_options(args, 1), [dataset])
    except SweepError as exc:
        raise UsageError(f"sensitivity timing: {exc}")
    return run_command("timing", lambda: run_space(space, sweep_options(args, len(plan)), plan))
