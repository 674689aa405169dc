"""`sensitivity sweep SPACE --design sobol|morris`: a designed sensitivity study (issue 30).

`--trials N` is the runs to spend per framework: the design takes the largest complete size within N (a
power-of-two Saltelli base, or a whole number of Morris trajectories) and the plan line says which. Each
framework runs the same points; `--seeds k` trains each point k times (default 1: seed noise then enters the
indices); `--seed` is SALib's. With `--until-settled --max-trials M`, rounds follow the first: each doubles the
design (its points the next one's first) while a framework's ranking is not settled (`indices.settled`), as long
as its runs per framework stay within M. Bad input is one line and exit 2 before anything is written.
"""
from __future__ import annotations

from dataclasses import replace

from sensitivity.commands.common import EXIT_OK, UsageError
from sensitivity.commands.launch import check_study_name, print_forecast, run_checks, run_command, sweep_options
from sensitivity.config.design import DESIGN_ATTR, Design, design_within, params_of_space
from sensitivity.config.spaces import load_space
from sensitivity.forecast.launch import sweep_runs
from sensitivity.studies import catalog
from sensitivity.studies.storage import default_url
from sensitivity.sweep.design import admit_design, design_plan
from sensitivity.sweep.driver import run_space, sweep_plan
from sensitivity.sweep.tuning import stop_ray


def designed_sweep(args, overrides: dict) -> int:
    where = f"sensitivity sweep: --design {args.design}"
    for given, option in ((args.sampler, "--sampler"), (args.with_defaults, "--with-defaults"),
                          (args.pruner != "none", f"--pruner {args.pruner}")):
        if given:
            raise UsageError(f"{where}: cannot be combined with {option} (the design chooses every configuration, "
                             "and each point needs its value); allowed: one of them")
    _check_rounds(args, where)
    seeds = args.seeds or 1
    overrides = {**overrides, "seeds": seeds}
    space = run_checks("sweep", lambda: load_space(args.space, **overrides))
    try:
        design = design_within(args.design, params_of_space(space), args.trials, seed=args.seed or 0, seeds=seeds,
                               levels=args.levels)
    except ValueError as exc:
        raise UsageError(f"{where}: --trials {args.trials}: {exc}")
    args.sampler = "random"  # every trial is a queued point: the sampler never chooses
    options = sweep_options(args, len(design_plan(space, design)))
    run_checks("sweep", lambda: sweep_plan(args.space, options, False, **overrides))  # the sweep's own checks
    check_study_name(args.study, "sweep")
    if args.dry_run:
        plan = design_plan(space, design)
        print(_plan_line(args.trials, design, space))
        if args.until_settled:
            last = _rounds(design, args.max_trials)[-1]
            print(f"--until-settled: rounds double the design while a framework's ranking is not settled, to at most "
                  f"{last.describe()} ({last.points * seeds} runs per framework within --max-trials {args.max_trials})")
        runs = sweep_runs(space, len(plan), options, [])
        print_forecast(args, runs, f"plan of sweep {args.space} (study {args.study or space.study}): {len(plan)} "
                                   "design points, forecast as sampled configurations; nothing launched", True)
        return EXIT_OK
    if not args.until_settled:
        return _run_round(args, space, design, where, _plan_line(args.trials, design, space), keep_ray=False)
    rounds = _rounds(design, args.max_trials)
    try:
        for number, round_design in enumerate(rounds, start=1):
            line = (_plan_line(args.trials, round_design, space) if number == 1 else
                    f"round {number}: design: {round_design.describe()}; {round_design.points * seeds} runs per "
                    f"framework, the previous round's points among them")
            code = _run_round(args, space, round_design, where, line, keep_ray=True)
            if code != EXIT_OK:
                return code
            verdicts = _verdicts(args.study or space.study, args.storage)
            print(f"round {number} of at most {len(rounds)}: " + "; ".join(
                f"{framework}: {'settled' if ok else 'not settled'} ({why})" for framework, ok, why in verdicts))
            if all(ok for _, ok, _ in verdicts):
                print(f"settled after round {number}: every framework's ranking is settled")
                return EXIT_OK
        print(f"not settled within --max-trials {args.max_trials}: the next round's design "
              f"({_grown(rounds[-1]).points * seeds} runs per framework) would pass it; rerun with a larger "
              "--max-trials to add rounds")
        return EXIT_OK
    finally:
        stop_ray()


def _check_rounds(args, where: str) -> None:
    if args.until_settled and args.max_trials is None:
        raise UsageError(f"{where}: --until-settled needs --max-trials N, the most runs per framework its rounds "
                         "may spend")
    if args.max_trials is not None and not args.until_settled:
        raise UsageError(f"{where}: --max-trials is the budget of --until-settled; give both or neither")
    if args.max_trials is not None and args.max_trials < args.trials:
        raise UsageError(f"{where}: --max-trials {args.max_trials} is below --trials {args.trials}, the first "
                         "round's runs; allowed: at least --trials")


def _grown(design: Design) -> Design:
    """The next round's design: a Saltelli base or Morris trajectories twice as many, from the same seed (so the
    study's points are its first: `sweep.design.admit_design`)."""
    return replace(design, size=design.size * 2)


def _rounds(first: Design, max_trials: int) -> list:
    """The designs of the rounds: `first`, then each grown from the one before while its runs per framework
    (points x seeds) stay within `max_trials`."""
    rounds = [first]
    while _grown(rounds[-1]).points * first.seeds <= max_trials:
        rounds.append(_grown(rounds[-1]))
    return rounds


def _plan_line(trials: int, design: Design, space) -> str:
    spent, count = design.points * design.seeds, design.points * design.seeds * len(space.frameworks)
    return (f"design: {design.describe()}; --trials {trials} per framework buys {spent} runs (the largest "
            f"complete design within it{', rounded down' if spent < trials else ''}), x "
            f"{len(space.frameworks)} framework(s) = {count} runs; "
            + ("one seed a point: seed noise enters the indices" if design.seeds == 1 else
               f"the indices read the mean of {design.seeds} seeds a point"))


def _run_round(args, space, design: Design, where: str, line: str, keep_ray: bool) -> int:
    """Run `design` into the study (admitted: new, the same, or a smaller design it grows), `line` printed first."""
    plan = design_plan(space, design)
    try:
        grown = admit_design(args.storage or default_url(), args.study or space.study, design)
    except ValueError as exc:
        raise UsageError(f"{where}: {exc}")
    print(line + ("; the study's smaller design grows to it (its points are this one's first)" if grown else ""))
    options = sweep_options(args, len(plan))
    return run_command("sweep", lambda: run_space(space, options, plan, keep_ray=keep_ray,
                                                  attrs={DESIGN_ATTR: design.attrs()}))


def _verdicts(study_name: str, storage) -> list:
    """[(framework, settled, why)] of the study's designed importance now."""
    # lazy: optuna, SALib
    from sensitivity.analysis.rankings.designed import designed_importance

    found = designed_importance(catalog.load(study_name, storage))
    return [(f.framework, bool(f.verdict and f.verdict.settled), f.verdict.why if f.verdict else f.why_not)
            for f in found.frameworks]
