"""`sensitivity sweep SPACE --design sobol|morris`: a designed sensitivity study (issue 30).

`--trials N` is the runs to spend per framework: the design takes the largest complete size within N (a
power-of-two Saltelli base, or a whole number of Morris trajectories) and the plan line says which. Each
framework runs the same points; `--seeds k` trains each point k times (default 1: seed noise then enters the
indices); `--seed` is SALib's. Bad input is one line and exit 2 before anything is written.
"""
from __future__ import annotations

from sensitivity.commands.common import EXIT_OK, UsageError
from sensitivity.commands.launch import check_study_name, print_forecast, run_checks, run_command, sweep_options
from sensitivity.config.design import DESIGN_ATTR, design_within, params_of_space
from sensitivity.config.spaces import load_space
from sensitivity.forecast.launch import sweep_runs
from sensitivity.studies.storage import default_url
from sensitivity.sweep.design import admit_design, design_plan
from sensitivity.sweep.driver import run_space, sweep_plan


def designed_sweep(args, overrides: dict) -> int:
    where = f"sensitivity sweep: --design {args.design}"
    for given, option in ((args.sampler, "--sampler"), (args.with_defaults, "--with-defaults"),
                          (args.pruner != "none", f"--pruner {args.pruner}")):
        if given:
            raise UsageError(f"{where}: cannot be combined with {option} (the design chooses every configuration, "
                             "and each point needs its value); allowed: one of them")
    seeds = args.seeds or 1
    overrides = {**overrides, "seeds": seeds}
    space = run_checks("sweep", lambda: load_space(args.space, **overrides))
    try:
        design = design_within(args.design, params_of_space(space), args.trials, seed=args.seed or 0, seeds=seeds,
                               levels=args.levels)
    except ValueError as exc:
        raise UsageError(f"{where}: --trials {args.trials}: {exc}")
    plan = design_plan(space, design)
    args.sampler = "random"  # every trial is a queued point: the sampler never chooses
    options = sweep_options(args, len(plan))
    run_checks("sweep", lambda: sweep_plan(args.space, options, False, **overrides))  # the sweep's own checks
    check_study_name(args.study, "sweep")
    spent = design.points * seeds
    line = (f"design: {design.describe()}; --trials {args.trials} per framework buys {spent} runs (the largest "
            f"complete design within it{', rounded down' if spent < args.trials else ''}), x "
            f"{len(space.frameworks)} framework(s) = {len(plan)} runs; "
            + ("one seed a point: seed noise enters the indices" if seeds == 1 else
               f"the indices read the mean of {seeds} seeds a point"))
    if args.dry_run:
        print(line)
        runs = sweep_runs(space, len(plan), options, [])
        print_forecast(args, runs, f"plan of sweep {args.space} (study {args.study or space.study}): {len(plan)} "
                                   "design points, forecast as sampled configurations; nothing launched", True)
        return EXIT_OK
    try:
        grown = admit_design(args.storage or default_url(), args.study or space.study, design)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}")
    print(line + ("; the study's smaller design grows to it (its points are this one's first)" if grown else ""))
    return run_command("sweep", lambda: run_space(space, options, plan, attrs={DESIGN_ATTR: design.attrs()}))
