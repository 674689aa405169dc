"""`sensitivity reproduce liu2018|dlbench`: a seed study's experiments as one preset, forecast before launch,
run on the Ray cluster and storage given, then attacked (liu2018) and reported beside the paper's numbers."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sensitivity import frameworks
from sensitivity.commands.analysis import _results_path
from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, load_study, number
from sensitivity.commands.launch import (add_dry_run, add_run_options, check_study_name, print_forecast, run_command,
                                         sweep_options)
from sensitivity.config.defaults import DefaultsError
from sensitivity.config.spaces import MAX_SEEDS
from sensitivity.forecast.launch import run_device, run_threads
from sensitivity.forecast.runs import ABSENT, runs_of_plan
from sensitivity.studies.storage import default_url, folder_beside
from sensitivity.sweep.driver import SweepError, check_destinations, check_inputs, run_space
from sensitivity.sweep.plans import defaults_space
from sensitivity.sweep.reproduce import PRESETS, ReproduceError, check_scale, placements, plan
from sensitivity.sweep.tuning import stop_ray


def add_parsers(commands) -> None:
    p = commands.add_parser("reproduce", help="a seed study's experiments (liu2018, dlbench) at their published "
                                              "budgets, forecast first, then reported beside the paper's numbers")
    p.add_argument("preset", choices=("liu2018", "dlbench"))
    p.add_argument("--data-dir", help="the folder of the official dataset files (default: $SENSITIVITY_DATA_DIR, "
                                      "else ~/.cache/sensitivity/data; sensitivity datasets download NAME fills it)")
    p.add_argument("--scale", type=number(float),
                   help="a rehearsal: every budget's epochs times F (0 < F <= 1), on the datasets present, an offline "
                        "stand-in for MNIST; its numbers are not comparable with the paper's")
    p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS),
                   help="seeds a cell (default: the preset's: liu2018 5, dlbench 3)")
    p.add_argument("--frameworks", help="comma-separated: a subset of the preset's frameworks")
    p.add_argument("--out", help="the report (default results/STUDY-report.html)")
    add_dry_run(p)
    add_run_options(p)
    p.set_defaults(handler=_cmd_reproduce, command="reproduce")


def _cmd_reproduce(args) -> int:
    """With --data-dir, the run reads $SENSITIVITY_DATA_DIR (its workers too), put back when it ends."""
    before = os.environ.get("SENSITIVITY_DATA_DIR")
    try:
        return _reproduce(args)
    finally:
        if before is None:
            os.environ.pop("SENSITIVITY_DATA_DIR", None)
        else:
            os.environ["SENSITIVITY_DATA_DIR"] = before


def _reproduce(args) -> int:
    preset = PRESETS[args.preset]
    try:
        scale = check_scale(args.scale)
    except ReproduceError as exc:
        raise UsageError(f"sensitivity reproduce: {exc}")
    if args.data_dir is not None:
        if not Path(args.data_dir).is_dir():
            raise UsageError(f"sensitivity reproduce: --data-dir {args.data_dir}: not a folder")
        os.environ["SENSITIVITY_DATA_DIR"] = str(Path(args.data_dir).resolve())  # the workers read it too
    names = args.frameworks.split(",") if args.frameworks else list(preset.frameworks)
    for name in names:
        if name not in preset.frameworks:
            raise UsageError(f"sensitivity reproduce: --frameworks: {name!r} is not in {preset.name}; allowed: "
                             f"{', '.join(preset.frameworks)}")
        if not frameworks.probe(name)[1]:
            raise UsageError(f"sensitivity reproduce: framework {name} is not usable here ({frameworks.probe(name)[2]}): "
                             "scripts/setup.sh installs it, or leave it out with --frameworks")
    check_study_name(args.study, "reproduce")
    try:
        check_destinations(sweep_options(args, 1))  # before the datasets are read and the probe's cache written
    except SweepError as exc:
        raise UsageError(f"sensitivity reproduce: {exc}")
    args.study = args.study or f"reproduce-{preset.name}" + (f"-scale{scale:g}" if scale < 1 else "")
    seeds = args.seeds or preset.seeds
    try:
        placed = placements(preset, scale, args.dry_run)
        shown = [p.runs_on or p.official for p in placed]
        space = defaults_space(args.study, names, shown, seeds, ("native",))
        planned, absent = plan(preset, placed, names, seeds, scale, space)
    except (ReproduceError, DefaultsError) as exc:
        raise UsageError(f"sensitivity reproduce: {exc}")
    if preset.robustness:
        args.keep_checkpoints = True
    if not planned and not args.dry_run:
        raise UsageError(f"sensitivity reproduce: nothing to run: no dataset of {preset.name} is present "
                         f"({', '.join(preset.datasets)}); sensitivity datasets download NAME --data-dir DIR")
    passes = []  # (study, options): a GPU run of dlbench on the CPU first, then on the GPU
    if preset.gpu and args.gpus_per_trial:
        passes.append((args.study, sweep_options(_with(args, gpus_per_trial=0), len(planned))))
        passes.append((f"{args.study}-gpu", sweep_options(_with(args, study=f"{args.study}-gpu"), len(planned))))
    else:
        passes.append((args.study, sweep_options(args, len(planned))))
    statuses = "; ".join(f"{p.official}: {p.status}" for p in placed)
    launches = []
    for study, options in passes:
        device, threads = run_device(options), run_threads(options)
        runs = runs_of_plan(planned, space.val_fraction, device, threads) + runs_of_plan(
            absent, space.val_fraction, device, threads, status=ABSENT)
        heading = (f"plan of reproduce {preset.name} (study {study}) on {device}, scale {scale:g}, {seeds} seeds a "
                   f"cell: {statuses}" + ("; nothing launched" if args.dry_run else ""))
        found = print_forecast(args, runs, heading, sampled=False)
        described = {"preset": preset.name, "scale": scale, "seeds": seeds, "frameworks": names,
                     "datasets": {p.official: p.status for p in placed}, "device": device}
        launches.append((study, options, {"forecast": found.attrs(), "reproduce": described}))
    if args.dry_run:
        return EXIT_OK
    codes = [_launch(args, preset, space.model_copy(update={"study": study}), options, planned, attrs)
             for study, options, attrs in launches]
    return max(codes)


def _with(args, **changes):
    return argparse.Namespace(**{**vars(args), **changes})


def _launch(args, preset, space, options, planned: list, attrs: dict) -> int:
    # lazy: optuna, pandas, plotly
    from sensitivity.analysis.report.page import write_report
    from sensitivity.experiments.robustness import RobustnessError, attack_study

    try:
        check_inputs(space, options, sorted({t.planned["dataset"] for t in planned}))
    except SweepError as exc:
        raise UsageError(f"sensitivity reproduce: {exc}")
    try:
        code = run_command("reproduce", lambda: run_space(space, options, planned, keep_ray=True, attrs=attrs))
    finally:
        stop_ray()
    if code != EXIT_OK:
        return code
    study = load_study("reproduce", space.study, args.storage)
    failed = False
    if preset.robustness:
        try:
            _, failures = attack_study(study, log=lambda message: print(message, file=sys.stderr),
                                       surrogate_root=folder_beside(args.storage or default_url(), "robustness"))
            failed = bool(failures)
        except RobustnessError as exc:
            print(f"sensitivity reproduce: robustness: {exc}", file=sys.stderr)
            failed = True
    out = (Path(args.out).with_stem(Path(args.out).stem + space.study.removeprefix(args.study)) if args.out
           else _results_path(space.study, "-report.html", "reproduce"))
    print(f"report: {write_report(study, out).resolve()}")
    return EXIT_TRIAL_FAILED if failed else EXIT_OK
