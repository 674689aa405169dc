"""What every command that runs trials on Ray into a study shares (sweep, defaults, transfer, crossover, timing,
ablate, reproduce): its options, the checks made before anything runs, the forecast of a dry run, and how a
run's outcome becomes an exit code."""
from __future__ import annotations

import sys

from sensitivity.commands.common import EXIT_OK, EXIT_TRIAL_FAILED, UsageError, number
from sensitivity.config.defaults import DefaultsError
from sensitivity.config.spaces import SpaceError
from sensitivity.core import paths
from sensitivity.core.models import MODELS
from sensitivity.core.spec import MAX_THREADS, MAX_TIMEOUT_S
from sensitivity.forecast.estimate import text
from sensitivity.forecast.launch import ForecastError, forecast_of
from sensitivity.studies.storage import StorageError, StorageLost
from sensitivity.sweep.driver import SweepError, SweepFailed, SweepOptions
from sensitivity.sweep.tuning import stop_ray

MAX_PARALLEL = 1_024
MAX_GPUS_PER_TRIAL = 64
MAX_BUDGET_S = 366 * 24 * 3600.0


def add_run_options(p) -> None:
    """Options of every command that runs trials on Ray into a study."""
    p.add_argument("--parallel", type=number(int, 0, strict=True, maximum=MAX_PARALLEL), default=1)
    p.add_argument("--storage", help="sqlite:///FILE, postgresql://..., journal:FILE (default: $SENSITIVITY_STORAGE, "
                   "else results/optuna.db); a PostgreSQL password may come from PGPASSWORD or ~/.pgpass")
    p.add_argument("--study", help="study name")
    p.add_argument("--address", help="a running Ray cluster: auto or HOST:PORT (default: a local Ray)")
    p.add_argument("--cpus-per-trial", type=number(float, 0, strict=True, maximum=MAX_THREADS), default=1)
    p.add_argument("--gpus-per-trial", type=number(float, 0, maximum=MAX_GPUS_PER_TRIAL), default=0,
                   help="at most 1; a fraction shares one GPU between trials (0.25: four trials on a GPU)")
    p.add_argument("--deterministic", action="store_true",
                   help="every trial sets its framework's deterministic-kernel flags (recorded)")
    p.add_argument("--timeout-per-trial", type=number(float, 0, strict=True, maximum=MAX_TIMEOUT_S))
    p.add_argument("--time-budget", type=number(float, 0, strict=True, maximum=MAX_BUDGET_S),
                   help="seconds for the whole run")
    p.add_argument("--allow-space-change", action="store_true", help="resume a study made from another space")
    p.add_argument("--keep-weights", action="store_true",
                   help="each trial saves its trained weights under results/weights/STUDY/ "
                        "(for sensitivity robustness)")
    p.add_argument("--keep-checkpoints", action="store_true",
                   help="--keep-weights, and each epoch's weights beside them (robustness matches clean accuracy "
                        "with them, then keeps only those that bracket its target)")
    p.add_argument("--tune-dir", metavar="FOLDER",
                   help="where Ray Tune keeps its files while the run lasts (default: beside the storage's file, "
                        "FOLDER/ray-tune; results/ray-tune for a database server); removed once the study holds "
                        "every final trial")
    p.add_argument("--no-progress", action="store_true")


def add_dry_run(p) -> None:
    p.add_argument("--dry-run", action="store_true",
                   help="launch nothing: print the plan and its forecast (core-hours, GPU-hours, energy, wall time) "
                        "from a throughput probe of each framework, model, device and batch size, cached per host")
    p.add_argument("--probe-steps", type=number(int, 0, strict=True, maximum=100_000), default=200,
                   help="timed training steps of each probe cell (default 200), after 10 warm-up steps")


def print_forecast(args, runs: list, heading: str, sampled: bool):
    """The forecast of `runs`, printed and returned; a plan no node holds is a usage error."""

    try:
        found = forecast_of(runs, sweep_options(args, len(runs)), sampled=sampled, steps=args.probe_steps,
                            log=lambda message: print(message, file=sys.stderr))
    except ForecastError as exc:
        raise UsageError(f"sensitivity {args.command}: {exc}")
    finally:
        if args.address:  # the cluster was joined to ask its resources and run the probe there
            stop_ray()
    print(text(found, heading))
    return found


def check_model(name, command: str) -> None:
    if name is not None and name not in MODELS:
        raise UsageError(f"sensitivity {command}: --model: unknown {name!r}; allowed: {', '.join(sorted(MODELS))}")


def check_study_name(name, command: str) -> None:
    """A --study name is checked before anything runs: it becomes part of file names."""
    if name is not None:
        try:
            paths.check_name(name)
        except paths.UnsafeName as exc:
            raise UsageError(f"sensitivity {command}: --study: {exc}")


def sweep_options(args, trials: int):
    return SweepOptions(
        trials=trials, parallel=args.parallel, sampler=getattr(args, "sampler", None) or "tpe",
        pruner=getattr(args, "pruner", "none"), storage=args.storage, study=args.study, address=args.address,
        cpus_per_trial=args.cpus_per_trial, gpus_per_trial=args.gpus_per_trial,
        timeout_per_trial=args.timeout_per_trial, time_budget=args.time_budget, seed=getattr(args, "seed", None),
        allow_space_change=args.allow_space_change, progress=not args.no_progress,
        keep_weights=args.keep_weights or args.keep_checkpoints, keep_checkpoints=args.keep_checkpoints,
        deterministic=args.deterministic, tune_dir=getattr(args, "tune_dir", None))


def run_command(command: str, run):
    """Run, mapping bad input to a one-line usage error (exit 2) and a run that lost or left trials, or
    whose storage failed, to one line and exit 1; print the summary."""

    try:
        summary = run()
    except (SweepFailed, StorageLost) as exc:
        print(f"sensitivity {command}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return EXIT_TRIAL_FAILED
    except (SpaceError, SweepError, StorageError, DefaultsError) as exc:  # a --with-defaults plan's too
        raise UsageError(f"sensitivity {command}: {exc}")
    print(f"study {summary['study']} in {summary['storage']}: {summary['final_trials']} final trials"
          + (f"; orphans failed: {summary['orphans']}" if summary["orphans"] else "")
          + (f"; orphans re-queued: {summary['orphans_requeued']}" if summary["orphans_requeued"] else ""))
    return EXIT_OK


def run_checks(command: str, check):
    """`check()`, its bad input a one-line usage error."""
    try:
        return check()
    except (SpaceError, SweepError, DefaultsError) as exc:
        raise UsageError(f"sensitivity {command}: {exc}")
