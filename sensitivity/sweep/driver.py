"""`sensitivity sweep`: validate, open the study, recover what a killed driver left, run to N trials.

Order matters: everything that can be wrong with the input (space, options, cluster address, storage,
environments, resources per trial against the cluster's) is reported before any trial starts or any study
is created; then the study is opened, orphans of a killed
driver are failed and re-queued, and Ray Tune runs exactly the trials still missing.

At the end the final trials are counted: fewer than N (a time budget aside), a trial of this driver left
RUNNING, a storage that failed beyond its retry window or an SQLite file deleted during the run end the
command with one line and exit 1 (`SweepFailed`, `StorageLost`), naming the trial log that holds every
finished trial. The heartbeat logs each failed beat and declares the storage lost after
`HEARTBEAT_FAILURES` in a row spanning more than the retry window.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from typing import Optional

from sensitivity import datasets, frameworks, ray_cluster
from sensitivity.config.defaults import Cut
from sensitivity.config.spaces import Space, load_space
from sensitivity.core.paths import UnsafeName, check_name, check_results_folder, check_results_link
from sensitivity.forecast.launch import ForecastError, forecast_of, sweep_runs
from sensitivity.forecast.overhead import keep_run
from sensitivity.frameworks import gpu
from sensitivity.studies import storage as st
from sensitivity.studies import storage_health
from sensitivity.studies.records import SAMPLERS_ATTR, SPACE_HASH, beat, count_final, counts_towards_target, is_final
from sensitivity.studies.redaction import describe, reason
from sensitivity.studies.storage import StorageLost, default_url, open_storage
from sensitivity.sweep import stopping, tune_files
from sensitivity.sweep.plans import default_plan, enqueue_plan, longest_first
from sensitivity.sweep.recovery import recover
from sensitivity.sweep.samplers import PRUNERS, SAMPLERS, make_sampler
from sensitivity.sweep.trial_log import check_log, log_path, log_study
from sensitivity.sweep.tuning import ResourceError, check_address, check_open_files, run_tune, start_ray, stop_ray

HEARTBEAT_S = 5.0
HEARTBEAT_FAILURES = 3
log = logging.getLogger(__name__)


class SweepError(Exception):
    """Bad input found before anything ran: one line, exit 2."""


class SweepFailed(Exception):
    """The run ended without its N final trials, or with trials left RUNNING: one line, exit 1."""


@dataclass
class SweepOptions:
    trials: int
    parallel: int = 1
    sampler: str = "tpe"
    pruner: str = "none"
    storage: Optional[str] = None
    study: Optional[str] = None
    address: Optional[str] = None
    cpus_per_trial: float = 1
    gpus_per_trial: float = 0
    timeout_per_trial: Optional[float] = None
    time_budget: Optional[float] = None
    seed: Optional[int] = None
    allow_space_change: bool = False
    progress: bool = True
    keep_weights: bool = False  # each trial saves its trained weights (for sensitivity robustness)
    keep_checkpoints: bool = False  # and each epoch's weights beside them (trial.loop.checkpoint_path)
    deterministic: bool = False  # each trial sets its framework's deterministic-kernel flags
    tune_dir: Optional[str] = None  # where Ray Tune's files go (default: beside the storage; sweep.tune_files)


def sweep_plan(space_path, options: SweepOptions, with_defaults: bool = False, **overrides) -> tuple:
    """(the checked space of a space file, the planned trials of --with-defaults); `overrides` (frameworks,
    seeds, semantics) replace the file's values."""
    space = load_space(space_path, **overrides)
    _check_options(space, options)
    _check_environments(space, options)
    check_inputs(space, options)  # the defaults' plan reads the dataset
    cut = Cut(epochs=space.fixed["epochs"]) if "epochs" in space.fixed else None  # the sweep's own budget
    plan = default_plan(space, space.frameworks, [space.dataset], seeds=space.seeds, cut=cut) if with_defaults else []
    return space, plan


def run_sweep(space_path, options: SweepOptions, with_defaults: bool = False, **overrides) -> dict:
    """Sweep a space file (see `sweep_plan`); the forecast is kept with the study where the probe's cache
    holds every cell of it (`sensitivity sweep --dry-run` fills it)."""

    space, plan = sweep_plan(space_path, options, with_defaults, **overrides)
    runs = sweep_runs(space, options.trials, options, plan)
    try:
        kept = forecast_of(runs, options, sampled=len(runs) > len(plan), probe=False)
    except ForecastError:  # a plan no node holds: Ray's start refuses it below, in one line
        kept = None
    return run_space(space, options, plan, attrs={"forecast": kept.attrs()} if kept else None)


def run_space(space: Space, options: SweepOptions, plan: list = (), keep_ray: bool = False,
              attrs: Optional[dict] = None) -> dict:
    """Run a validated space to N final trials; `plan`'s trials (PlannedTrial) are queued first, once.
    With `keep_ray`, a Ray this process started stays up for the next call (stop it with tuning.stop_ray).
    `attrs` (the forecast made before the launch, a preset's description) are kept as the study's user
    attributes, each unless the study holds it already (a resumed run keeps its first forecast). SIGTERM and
    SIGINT end it with `stopping.Stopped`, after the live trials are told and Ray is stopped."""
    _check_options(space, options)
    _check_environments(space, options)
    check_inputs(space, options)
    with stopping.signals_end_the_sweep():
        return _run_checked(space, options, plan, keep_ray, attrs)


def _run_checked(space: Space, options: SweepOptions, plan, keep_ray: bool, attrs: Optional[dict]) -> dict:
    url = options.storage or default_url()
    storage = open_storage(url)
    if not ray_cluster.started():
        ray_cluster.clean_up_leftovers()  # a killed driver's Ray first, then ours
        try:
            start_ray(options)
        except ResourceError as exc:
            raise SweepError(str(exc)) from None
        finally:
            stopping.rearm()  # Ray's start installs its own SIGTERM handler
    try:
        with _storage_failures(url, options.study or space.study):
            storage_health.reset_lost()
            study = _open_study(space, storage, options)
            log_study(study)
            driver_id = uuid.uuid4().hex[:12]
            stop_beating = _start_heartbeat(study, driver_id, url)
            try:
                recovered = recover(study, driver_id)
                for key, value in (attrs or {}).items():
                    if key not in study.user_attrs:
                        study.set_user_attr(key, value)
                # on one slot the order makes no wall time, and a plan's own order stays (timing's interleaving)
                enqueue_plan(study, longest_first(plan, space) if options.parallel > 1 else plan)
                missing = options.trials - count_final(study)
                summary = {"study": study.study_name, "storage": describe(url), "orphans": recovered.orphaned,
                           "orphans_requeued": recovered.queued}
                started = time.monotonic()
                if missing > 0:
                    # lazy: optuna
                    from sensitivity.sweep.driver_storage import flush
                    run_tune(study, space, options, driver_id, missing)
                    flush(study)  # what the last seconds held
                    keep_run(study, driver_id, missing, not (options.address or os.environ.get("RAY_ADDRESS")))
                budget_out = options.time_budget is not None and time.monotonic() - started >= options.time_budget
                summary["final_trials"] = _check_final(study, options.trials, url, driver_id, budget_out)
                # the study holds every final trial of the run: Tune's files are read by nothing now
                tune_files.remove_run(study, driver_id, tune_files.tune_root(url, options.tune_dir))
                return summary
            finally:
                stop_beating()
    finally:
        if not keep_ray:
            stop_ray()


def _storage_failures(url: str, study_name: str):
    """Map any storage exception of the run to StorageLost: one line naming the storage (no password) and
    the trial log to rebuild from."""

    @contextlib.contextmanager
    def mapping():
        hint = (f"; every finished trial is in {log_path(study_name)} (after restoring the storage, or into a new "
                f"one: sensitivity studies rebuild {log_path(study_name)} --storage URL)")
        try:
            yield
            st.check_intact(url)
        except StorageLost as exc:
            raise StorageLost(f"{exc}{hint}") from None
        except OSError as exc:
            if exc.errno != errno.ENOSPC and "No space left on device" not in str(exc):
                raise
            # a full disk under the files the run writes beside its study (Ray Tune's, pyarrow's OSError)
            raise StorageLost(f"a file of the run could not be written, No space left on device ({reason(exc)})"
                              f"{hint}") from None
        except Exception as exc:
            if not st.is_storage_error(exc):
                raise
            raise StorageLost(f"storage {describe(url)} failed: {reason(exc)}{hint}") from None
    return mapping()


def _check_final(study, target: int, url: str, driver_id: str, budget_out: bool) -> int:
    """The number of final trials, after checking the run lost nothing (else SweepFailed or StorageLost):
    the storage intact, none of this driver's trials RUNNING, and N final trials, counting those other
    live drivers still run (they will finish them) and forgiving a time budget that ran out."""
    # lazy: optuna
    from optuna.trial import TrialState

    st.check_intact(url)
    fault = storage_health.write_fault()  # a full disk: the study took what it could, the folder did not
    if fault is not None:
        final = sum(is_final(t) for t in study.get_trials(deepcopy=False))
        if final < target:
            raise SweepFailed(f"{fault}; study {study.study_name} in {describe(url)} has {final} final trials of "
                              f"{target}, the trials that were running are left to the next run: free space there, "
                              "then rerun the same command")
        log.warning("%s; study %s in %s holds its %d final trials", fault, study.study_name, describe(url), final)
        return final
    if storage_health.lost_reason() is not None:
        raise StorageLost(f"storage {describe(url)} failed during the sweep ({storage_health.lost_reason()})")
    trials = study.get_trials(deepcopy=False)
    final = sum(is_final(t) for t in trials)
    running = [t.number for t in trials if t.state == TrialState.RUNNING and t.user_attrs.get("driver") == driver_id]
    elsewhere = sum(counts_towards_target(t) and not is_final(t) for t in trials) - len(running)  # other drivers'
    if running or (final + elsewhere < target and not budget_out):
        left = f", and trials {running} of this run left RUNNING" if running else ""
        raise SweepFailed(f"study {study.study_name} in {describe(url)} has {final} final trials of {target}{left}; "
                          "rerun the same command to run the missing ones")
    return final


def _check_options(space: Space, options: SweepOptions) -> None:
    try:
        check_name(options.study or space.study)
    except UnsafeName as exc:
        raise SweepError(f"--study: {exc}") from None
    if options.sampler not in SAMPLERS:
        raise SweepError(f"--sampler {options.sampler!r}: allowed {', '.join(SAMPLERS)}")
    if options.pruner not in PRUNERS:
        raise SweepError(f"--pruner {options.pruner!r}: allowed {', '.join(PRUNERS)}")
    if options.pruner != "none" and len(space.objectives) > 1:
        raise SweepError(f"--pruner {options.pruner}: pruning needs a single objective; this space has "
                         f"{len(space.objectives)} (Optuna records no intermediate values with several)")
    if options.sampler == "grid" and any(getattr(p, "type", "") == "float" and p.step is None
                                         for p in space.parameters.values()):
        raise SweepError("--sampler grid: every float parameter needs a step")
    if options.trials <= 0 or options.parallel <= 0:
        raise SweepError("--trials and --parallel must be positive")
    _check_gpus(space, options)
    _check_ray_quantities(options)


RAY_PRECISION = 0.0001  # Ray keeps resource quantities to 4 decimal places; one above 1 must be whole


def _check_ray_quantities(options: SweepOptions) -> None:
    """What Ray would refuse once the study and the cache are written: a quantity it cannot hold (`1e-300`,
    `1.5`)."""
    asked = (("--cpus-per-trial", options.cpus_per_trial), ("--gpus-per-trial", options.gpus_per_trial))
    for option, wanted in asked:
        if wanted and (wanted < RAY_PRECISION or abs(round(wanted, 4) - wanted) > 1e-12
                       or (wanted > 1 and not float(wanted).is_integer())):
            raise SweepError(f"{option} {wanted:g}: Ray takes a whole number, or a fraction below 1 of at most "
                             f"4 decimal places (at least {RAY_PRECISION:g})")


def _check_local_resources(options: SweepOptions) -> None:
    """What a local Ray would wait on forever: more CPUs or GPUs per trial than this machine has."""
    if options.address or os.environ.get("RAY_ADDRESS"):
        return  # a cluster: check_resources sees its nodes once joined
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if options.cpus_per_trial > cores:
        raise SweepError(f"--cpus-per-trial {options.cpus_per_trial:g}: this machine has {cores} CPU(s), and a "
                         "local Ray places a trial on it alone; allowed: up to that, or --address a cluster")
    count = gpu.visible_count() if options.gpus_per_trial else None
    if count is not None and options.gpus_per_trial > count:
        raise SweepError(f"--gpus-per-trial {options.gpus_per_trial:g}: this machine has {count} GPU(s) visible; "
                         "allowed: 0 here, or --address a cluster with GPUs")


def _check_gpus(space: Space, options: SweepOptions) -> None:
    """GPUs per trial: at most one (no framework's multi-GPU path is built), fractions share one; a space
    that fixes a GPU device needs them, and leaves the choice of the GPU to Ray."""
    gpus, device = options.gpus_per_trial, str(space.fixed.get("device", "cpu"))
    if gpus > 1:
        raise SweepError(f"--gpus-per-trial {gpus:g}: at most 1 GPU per trial (no framework's multi-GPU path is "
                         "built); allowed: 0 to 1, a fraction shares one GPU between trials")
    if device != "cpu" and not gpus:
        raise SweepError(f"device: {device} needs --gpus-per-trial above 0 (Ray hands each trial its GPU)")
    if device.startswith("gpu:"):
        raise SweepError(f"device: {device}: a sweep takes device: gpu; Ray chooses each trial's GPU")


def _check_environments(space: Space, options: SweepOptions) -> None:
    """Every framework runs here; for GPU trials on a local Ray, its build and the driver can use a GPU (on a
    cluster each trial checks its own node's placement)."""
    for name in space.frameworks:
        version, usable, why = frameworks.probe(name)
        if not usable:
            raise SweepError(f"framework {name} cannot run here: {why}")
        refusal = options.gpus_per_trial and not options.address and frameworks.gpu_refusal(name)
        if refusal:
            raise SweepError(f"--gpus-per-trial {options.gpus_per_trial:g}: {name} cannot use a GPU here: {refusal}")
    _check_local_resources(options)  # after the builds: a CPU-only build is the better reason to give


def check_destinations(options: SweepOptions) -> None:
    """Where a run writes, checked before anything is written: the storage URL (its kind, its file's folder,
    a server answering), --address (its form, then a cluster answering: an unreachable one would be retried
    for minutes) and results/ (a folder this process can write in)."""
    try:
        check_results_link()  # before default_url resolves a path through it
        st.check_url(options.storage or default_url())
        st.check_journal_lock(options.storage or default_url())  # a lock no writer holds: exit 1, no wait
    except st.LockFault:
        raise
    except (st.StorageError, ValueError) as exc:
        raise SweepError(str(exc)) from None
    try:
        check_address(options.address)
        check_open_files()
        check_results_folder()
        tune_files.check_tune_dir(options.tune_dir)
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    ray_address = os.environ.get("RAY_ADDRESS")
    if not options.address and ray_address:  # ray.init() joins RAY_ADDRESS: checked as --address is
        try:
            check_address(ray_address)
        except ValueError as exc:
            raise SweepError(f"RAY_ADDRESS={ray_address!r}: {str(exc).removeprefix('--address ')}; unset it for a "
                             "local Ray") from None


def check_inputs(space: Space, options: SweepOptions, datasets_used=None) -> None:
    """After `check_destinations`, the first write: the datasets (`datasets_used`, else the space's) load here
    without a download (parsed into the cache now: a missing or corrupt file is one line before Ray starts,
    not a failed trial); and a fixed GPU exists on this machine where Ray is local (no --address). The study's
    trial log is checked with the destinations: a FIFO there would block the first append forever."""
    check_destinations(options)
    try:
        check_log(options.study or space.study)
    except ValueError as exc:
        raise SweepError(str(exc)) from None
    if not options.address:
        try:
            gpu.check_here(space.fixed.get("device", "cpu"))
        except ValueError as exc:
            raise SweepError(f"fixed.device: {exc}") from None
    for name in datasets_used or [space.dataset]:
        try:
            datasets.ready(name)
        except datasets.DatasetError as exc:
            raise SweepError(f"dataset {name}: {str(exc).removeprefix(name + ': ')}") from None


def _open_study(space: Space, storage, options: SweepOptions):
    # lazy: optuna
    import optuna

    # lazy: optuna
    from sensitivity.sweep.driver_storage import driver_view

    name = options.study or space.study
    directions = [o.direction for o in space.objectives]
    sampler = make_sampler(options.sampler, space, options.seed)
    study = optuna.create_study(study_name=name, storage=driver_view(storage), directions=directions,
                                sampler=sampler, load_if_exists=True)
    if [d.name.lower() for d in study.directions] != directions:
        raise SweepError(f"study {name} exists with other objectives' directions; use --study to name a new one")
    metrics = [o.metric for o in space.objectives]  # optuna-dashboard shows these, not "Objective 0"
    if study.metric_names != metrics:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(metrics)
    used = list(study.user_attrs.get(SAMPLERS_ATTR) or ())
    if options.sampler not in used:  # how the trials were drawn, for the analysis (`rankings.sampling`)
        study.set_user_attr(SAMPLERS_ATTR, [*used, options.sampler])
    stored = study.user_attrs.get(SPACE_HASH)
    if stored is None:
        study.set_user_attr(SPACE_HASH, space.fingerprint())
        study.set_user_attr("space", space.model_dump(mode="json"))
    elif stored != space.fingerprint():
        if not options.allow_space_change:
            raise SweepError(f"study {name} was made from another search space (fingerprint {stored}, now "
                             f"{space.fingerprint()}); resume with --allow-space-change, or name a new --study")
        study.set_user_attr(SPACE_HASH, space.fingerprint())
    return study


def _start_heartbeat(study, driver_id: str, url: str):
    """Beat every HEARTBEAT_S seconds, each beat tried once; failures are logged, and after
    HEARTBEAT_FAILURES in a row over more than the retry window the storage is declared lost (Tune stops)."""
    stop = threading.Event()
    beat(study, driver_id)

    def loop() -> None:
        # lazy: optuna
        from sensitivity.sweep.driver_storage import flush
        failures, last_ok = 0, time.monotonic()
        while not stop.wait(HEARTBEAT_S):
            try:
                st.check_intact(url)
                with storage_health.single_attempt():
                    beat(study, driver_id)
                    flush(study)  # the intermediate values held since the last write
                if failures:
                    log.warning("storage %s: heartbeat written again after %d failures", describe(url), failures)
                failures, last_ok = 0, time.monotonic()
            except StorageLost as exc:  # the run ends with this line
                storage_health.mark_lost(str(exc))
                return
            except Exception as exc:
                failures += 1
                down = time.monotonic() - last_ok
                log.warning("storage %s: heartbeat failed (%d in a row, %.0f s): %s", describe(url), failures, down,
                            reason(exc))
                if failures >= HEARTBEAT_FAILURES and down > storage_health.RETRY_WINDOW_S:
                    storage_health.mark_lost(f"no heartbeat written for {down:.0f} s: {reason(exc)}")
                    return

    threading.Thread(target=loop, daemon=True, name="heartbeat").start()
    return stop.set

