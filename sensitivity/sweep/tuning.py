"""Running the missing trials on Ray Tune: the cluster's checks, the scheduler, and a clean end.

Ray is started (or joined) before the study is opened; trials that ask for more CPUs or GPUs than the whole cluster has are
refused at once (Tune would wait for them forever). Whatever ends `tuner.fit()` (the time budget, Ctrl-C,
an error), the trials the searcher still holds are told FAIL as interrupted and queued again, like the
orphans of a killed driver: they do not count towards N, and a rerun runs them.
"""
from __future__ import annotations

import os
import socket
import time
from pathlib import Path


class ResourceError(Exception):
    """A trial asks for more than the cluster has: one line, exit 2."""


def check_address(address, timeout_s: float = 3.0) -> None:
    """HOST:PORT must answer a TCP connect (the GCS port) within `timeout_s`; raises ValueError with the
    reason. `auto` and ray:// addresses are left to Ray."""
    if not address or address == "auto" or "://" in address:
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--address {address!r}: expected auto or HOST:PORT")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        why = "no answer" if isinstance(exc, socket.timeout) else (exc.strerror or str(exc))
        raise ValueError(f"--address {address}: no Ray cluster reachable there ({why} within {timeout_s:g} s)") \
            from None


def check_resources(cpus: float, gpus: float) -> None:
    """A trial of `cpus` CPUs and `gpus` GPUs must fit in the cluster Ray reports."""
    import ray
    have = ray.cluster_resources()
    for option, wanted, key in (("--cpus-per-trial", cpus, "CPU"), ("--gpus-per-trial", gpus, "GPU")):
        if wanted and wanted > have.get(key, 0):
            raise ResourceError(f"{option} {wanted:g}: the Ray cluster has {have.get(key, 0):g} {key}s in all, "
                                "so no trial could ever start")


def weights_dir(study_name: str) -> str:
    """results/weights/STUDY, absolute: where the trials of a study save their trained weights. On a
    cluster each node writes on its own disk, so robustness needs this folder shared (NFS) or the driver's
    node to run the trials."""
    from sensitivity.paths import RESULTS, under
    return str(under(RESULTS / "weights", study_name).resolve())


def scheduler(pruner: str, space):
    """ASHA, or for hyperband ASHA's asynchronous HyperBand (several brackets). Ray's synchronous
    HyperBandScheduler pauses trials to resume them later, which needs checkpoints that trials do not
    write: a paused trial would start again from epoch 1. The asynchronous schedulers only stop trials."""
    if pruner == "none":
        return None
    from ray.tune.schedulers import AsyncHyperBandScheduler
    objective = space.objectives[0]
    mode = "max" if objective.direction == "maximize" else "min"
    max_t = int(space.fixed.get("epochs", 10))
    brackets = 1 if pruner == "asha" else 3
    return AsyncHyperBandScheduler(metric=objective.metric, mode=mode, time_attr="epoch", max_t=max_t,
                                   grace_period=1, brackets=brackets)


def start_ray(options) -> None:
    """Start a local Ray or join the cluster, and check that a trial fits in it (else ResourceError)."""
    from sensitivity.sweep import ray_processes
    ray_processes.init_ray(options.address)  # first: Ray reads its environment when imported
    try:
        check_resources(options.cpus_per_trial, options.gpus_per_trial)
    except ResourceError:
        stop_ray()
        raise


def stop_ray() -> None:
    import ray

    from sensitivity.sweep import ray_processes
    ray.shutdown()
    ray_processes.forget_own()


def run_tune(study, space, options, driver_id: str, missing: int) -> None:
    """Run the missing trials on the Ray that start_ray started or joined."""
    from ray import tune
    from ray.tune.logger import JsonLoggerCallback

    from sensitivity.sweep import ray_processes

    from sensitivity.sweep.dispatch import trainable
    from sensitivity.sweep.progress import Progress
    from sensitivity.sweep.searcher import StudySearcher

    # a failed trial's result has no metric (never None, see dispatch): Tune must not insist on one
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"
    # the study is the record: of Tune's own loggers only the JSON one, which Tune reads back when fit()
    # ends; its TensorBoard logger imported tensorboardX, and so torch, into the driver (3 s)
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    stop_watching = ray_processes.watch_local_ray() if not options.address else (lambda: None)
    searcher, started, reason = None, time.monotonic(), "the sweep was stopped"
    try:
        run_options = {"timeout": options.timeout_per_trial}
        if "threads" not in space.fixed:
            run_options["threads"] = max(1, int(options.cpus_per_trial))
        with Progress(study, options.trials, enabled=options.progress) as progress:
            searcher = StudySearcher(study, space, driver_id, options.trials, run_options, progress.refresh,
                                     weights_dir=weights_dir(study.study_name) if options.keep_weights else None,
                                     pruning=options.pruner != "none")
            resources = {"cpu": options.cpus_per_trial, "gpu": options.gpus_per_trial}
            tuner = tune.Tuner(
                tune.with_resources(trainable, resources),
                tune_config=tune.TuneConfig(search_alg=searcher, scheduler=scheduler(options.pruner, space),
                                            num_samples=missing, max_concurrent_trials=options.parallel,
                                            reuse_actors=True, time_budget_s=options.time_budget),
                run_config=tune.RunConfig(name=f"{study.study_name}-{driver_id}", verbose=0,
                                          storage_path=ray_processes.tune_dir(), log_to_file=True,
                                          callbacks=[JsonLoggerCallback()],
                                          failure_config=tune.FailureConfig(max_failures=0)),
            )
            try:
                tuner.fit()
                reason = "the sweep ended before the trial did"
            except KeyboardInterrupt:
                reason = "the sweep was stopped (Ctrl-C)"
                raise
            except Exception as exc:
                reason = f"the driver failed: {type(exc).__name__}"
                raise
            finally:
                if options.time_budget and time.monotonic() - started >= options.time_budget:
                    reason = f"time budget of {options.time_budget:g} s ran out"
                searcher.interrupt_live(f"interrupted: {reason}")
    finally:
        stop_watching()
