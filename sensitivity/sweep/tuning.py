"""Running the missing trials on Ray Tune: the cluster's checks, the scheduler, and a clean end.

Ray is started (or joined) before the study is opened; trials that ask for more CPUs or GPUs than any one node
has are refused at once (Tune would wait for them forever). Whatever ends `tuner.fit()` (the time budget, Ctrl-C,
an error), the trials the searcher still holds are told FAIL as interrupted and queued again, like the
orphans of a killed driver: they do not count towards N, and a rerun runs them.
"""
from __future__ import annotations

import os
import resource
import socket
import time
from pathlib import Path

from sensitivity import private_apis, ray_cluster
from sensitivity.core.paths import RESULTS, under
from sensitivity.core.spec import TrialSpec
from sensitivity.studies import storage_health
from sensitivity.sweep import stopping
from sensitivity.sweep.progress import Progress
from sensitivity.sweep.recovery import MAX_ATTEMPTS
from sensitivity.sweep.trial_log import log_path
from sensitivity.sweep.tune_files import run_name, tune_root


class ResourceError(Exception):
    """A trial asks for more than the cluster has: one line, exit 2."""


# Where `ray start --head` records the cluster it started; Ray's `address="auto"` reads it (or RAY_ADDRESS).
CURRENT_CLUSTER = Path("/tmp/ray/ray_current_cluster")


def check_address(address, timeout_s: float = 3.0) -> None:
    """`auto` or HOST:PORT, whose GCS port answers a TCP connect within `timeout_s`; raises ValueError with
    the reason. Ray Client addresses (ray://) are refused: the driver runs on a node of the cluster."""
    if not address:
        return
    if "://" in address:
        raise ValueError(f"--address {address}: Ray Client (ray://) and other URLs are not supported: the sweep's "
                         "driver runs on a node of the cluster; give auto or the head's HOST:PORT (GCS, 6379 by "
                         "default)")
    if address == "auto":
        found = os.environ.get("RAY_ADDRESS") or (CURRENT_CLUSTER.read_text().strip()
                                                  if CURRENT_CLUSTER.is_file() else "")
        if not found or found == "auto":
            raise ValueError("--address auto: no running Ray cluster found on this machine (no RAY_ADDRESS, no "
                             f"{CURRENT_CLUSTER}); start one with `ray start --head`, or give HOST:PORT")
        check_address(found, timeout_s)
        return
    host, _, port = address.rpartition(":")
    if not host or not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"--address {address!r}: expected auto or HOST:PORT, PORT from 1 to 65535")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as connection:
            answer = _grpc_answer(connection, timeout_s)
    except (OSError, ValueError) as exc:  # ValueError: a host name no resolver takes (too long, a NUL)
        why = "no answer" if isinstance(exc, socket.timeout) else (getattr(exc, "strerror", None) or str(exc))
        raise ValueError(f"--address {address}: no Ray cluster reachable there ({why} within {timeout_s:g} s)") \
            from None
    if answer is not None:  # Ray would retry "Failed to connect to GCS" for minutes
        raise ValueError(f"--address {address}: not a Ray cluster's head: the server there does not speak gRPC, as "
                         f"Ray's GCS does ({answer}); give the head's GCS port (6379 by default, `ray status` shows "
                         "it)")


# An HTTP/2 client's connection preface and an empty SETTINGS frame (RFC 9113, 3.4): a gRPC server, as Ray's GCS
# is, answers with its own SETTINGS frame (type 4, stream 0) before anything else
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _grpc_answer(connection: socket.socket, timeout_s: float):
    """None where the server at the other end of `connection` answers an HTTP/2 preface with a SETTINGS frame
    within `timeout_s`, else what it did instead. With Ray's TLS on (RAY_USE_TLS), the TCP answer has to do."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return None
    header, deadline = b"", time.monotonic() + timeout_s
    try:
        connection.sendall(HTTP2_PREFACE)
    except ConnectionError:
        return "it closed the connection"
    while len(header) < 9:
        connection.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = connection.recv(9 - len(header))
        except socket.timeout:
            return f"it answered {header!r} and then nothing within {timeout_s:g} s" if header else \
                f"it answered nothing within {timeout_s:g} s"
        except ConnectionError:
            chunk = b""
        if not chunk:
            return f"it closed the connection after {len(header)} bytes" if header else "it closed the connection"
        header += chunk
    if header[3] == 4 and header[5:9] == bytes(4):
        return None
    return f"it answered {header!r}"


OPEN_FILES = 1024  # what a sweep raises its open-file limit to, where the hard limit allows
MIN_OPEN_FILES = 256  # below it, refused: a sweep of 2 trials at once failed here at 96 and ran at 128


def check_open_files(want: int = OPEN_FILES, least: int = MIN_OPEN_FILES) -> None:
    """Raise this process's open-file limit towards `want` as far as the hard limit allows (Ray's processes
    inherit it); ValueError below `least`: Ray would time out waiting for its GCS and end in a traceback."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return
    raised = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if raised > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    if raised < least:
        raise ValueError(f"open-file limit {soft} (hard {hard}): Ray and the trials' workers need at least {least} "
                         f"({want} for many trials at once); raise it (ulimit -n {want}) and run again")


def check_resources(cpus: float, gpus: float) -> None:
    """A trial of `cpus` CPUs and `gpus` GPUs must fit on one node of the cluster Ray reports: Ray places a
    trial on a single node, so cluster totals would pass trials that wait forever."""
    # lazy: ray
    import ray
    nodes = [n["Resources"] for n in ray.nodes() if n.get("Alive")]
    if any(n.get("CPU", 0) >= cpus and n.get("GPU", 0) >= gpus for n in nodes):
        return
    sizes = sorted({f"{n.get('CPU', 0):g} CPUs and {n.get('GPU', 0):g} GPUs" for n in nodes})
    asked = [f"{option} {wanted:g}" for option, wanted in (("--cpus-per-trial", cpus), ("--gpus-per-trial", gpus))
             if wanted]
    raise ResourceError(f"{' with '.join(asked)}: no Ray node holds that (the {len(nodes)} node(s) have "
                        f"{'; '.join(sizes) or 'nothing'}), so no trial could ever start")


def weights_dir(study_name: str) -> str:
    """results/weights/STUDY, absolute: where the trials of a study save their trained weights. On a
    cluster each node writes on its own disk, so robustness needs this folder shared (NFS) or the driver's
    node to run the trials."""
    return str(under(RESULTS / "weights", study_name).resolve())


def scheduler(pruner: str, space):
    """ASHA, or for hyperband ASHA's asynchronous HyperBand (several brackets). Ray's synchronous
    HyperBandScheduler pauses trials to resume them later, which needs checkpoints that trials do not
    write: a paused trial would start again from epoch 1. The asynchronous schedulers only stop trials."""
    if pruner == "none":
        return None
    # lazy: ray
    from ray.tune.schedulers import AsyncHyperBandScheduler
    objective = space.objectives[0]
    mode = "max" if objective.direction == "maximize" else "min"
    max_t = max_epochs(space)
    brackets = 1 if pruner == "asha" else 3
    return AsyncHyperBandScheduler(metric=objective.metric, mode=mode, time_attr="epoch", max_t=max_t,
                                   grace_period=1, brackets=brackets)


def max_epochs(space) -> int:
    """The most epochs a trial of `space` can run, ASHA's max_t (a trial that reaches it is stopped): the
    largest value of a tuned `epochs`, else the fixed one; with `iterations`, at most that many (every
    epoch takes a step at least); else TrialSpec's default."""
    for name in ("iterations", "epochs"):
        param = space.parameters.get(name)
        if param is not None:
            return int(max(param.choices) if param.type == "categorical" else param.high)
        if name in space.fixed:
            return int(space.fixed[name])
    return TrialSpec.model_fields["epochs"].default


def start_ray(options) -> None:
    """Start a local Ray or join the cluster, and check that a trial fits in it (else ResourceError)."""
    ray_cluster.init_ray(options.address)  # first: Ray reads its environment when imported
    try:
        check_resources(options.cpus_per_trial, options.gpus_per_trial)
    except ResourceError:
        stop_ray()
        raise


def stop_ray() -> None:
    # lazy: ray
    import ray

    ray.shutdown()
    ray_cluster.stopped()


def run_tune(study, space, options, driver_id: str, missing: int) -> None:
    """Run the missing trials on the Ray that start_ray started or joined."""
    # lazy: ray
    from ray import tune

    # lazy: optuna, ray
    from sensitivity.sweep.dispatch import ForgetFinished, TrialFolders, trainable
    from sensitivity.sweep.nodes import NodeOfTrial
    from sensitivity.sweep.searcher import DroppedTrials, StopOnLostStorage, StudySearch, StudySearcher

    # a failed trial's result has no metric (never None, see dispatch): Tune must not insist on one
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"
    # the study is the record: none of Tune's loggers (its JSON logger wrote every epoch's result and a
    # params.pkl per trial; its TensorBoard logger imported tensorboardX, and so torch, into the driver)
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
    # a trial's error is the searcher's one line (its actor died, or its node was lost), not Ray's traceback
    os.environ.setdefault("TUNE_PRINT_ALL_TRIAL_ERRORS", "0")
    # a run that starts with fewer CPUs than --parallel grows to it once they free, however short its trials
    private_apis.keep_started_actors()
    searcher, started, reason = None, time.monotonic(), "the sweep was stopped"

    def head_lost() -> None:  # its live trials become orphans, queued again, before the driver ends
        if searcher is not None:
            searcher.interrupt_live("interrupted: the Ray cluster's head was lost")

    joined = options.address or os.environ.get("RAY_ADDRESS")
    stop_watching = ray_cluster.watch_cluster_head(head_lost) if joined else ray_cluster.watch_local_ray()
    try:
        run_options = {"timeout": options.timeout_per_trial, "deterministic": options.deterministic or None}
        if "threads" not in space.fixed:
            run_options["threads"] = max(1, int(options.cpus_per_trial))
        with Progress(study, options.trials, enabled=options.progress) as progress:
            searcher = StudySearcher(study, space, driver_id, options.trials, run_options, progress.refresh,
                                     weights_dir=weights_dir(study.study_name) if options.keep_weights else None,
                                     pruning=options.pruner != "none", log_path=log_path(study.study_name),
                                     keep_checkpoints=options.keep_checkpoints, parallel=options.parallel)
            resources = {"cpu": options.cpus_per_trial, "gpu": options.gpus_per_trial}
            root = tune_root(options.storage, options.tune_dir)  # beside the study (tune_files)
            tuner = tune.Tuner(
                tune.with_resources(trainable, resources),
                tune_config=tune.TuneConfig(search_alg=StudySearch(searcher, options.parallel),
                                            scheduler=scheduler(options.pruner, space),
                                            # the searcher ends the run at N; Tune's bound leaves room for
                                            # retries (a lost node's trial runs again in this run)
                                            num_samples=missing * MAX_ATTEMPTS, reuse_actors=True,
                                            time_budget_s=options.time_budget),
                run_config=tune.RunConfig(name=run_name(study.study_name, driver_id), verbose=0,
                                          storage_path=str(root), log_to_file=True,
                                          callbacks=[ForgetFinished(), NodeOfTrial(driver_id), TrialFolders(),
                                                     DroppedTrials(driver_id)],
                                          stop=StopOnLostStorage(),
                                          failure_config=tune.FailureConfig(max_failures=0)),
            )
            try:
                root.mkdir(parents=True, exist_ok=True)
                aside = root / f"{run_name(study.study_name, driver_id)}.ray.log"  # Ray's messages
                with ray_cluster.ray_text_aside(aside, on_write_fault=storage_health.mark_write_fault):
                    tuner.fit()
                reason = "the sweep ended before the trial did"
            except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (sweep.stopping)
                reason = f"the sweep was stopped ({stopping.stopped_by() or 'Ctrl-C'})"
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
