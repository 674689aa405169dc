"""Framework workers that outlive a command: one keeper actor per Ray node holds them between trials.

A framework worker (`trial.runner.Worker`) costs seconds to start: its interpreter, the framework's import, the
first compile. Each stage of a study is its own command with its own Ray Tune run, whose actors end with it; the
workers they owned ended too, so every stage paid every start-up again. The keeper is a detached, named Ray
actor (`KEEPER_NAME` + the node's id, in namespace `NAMESPACE`), created on its node by the first trial that
asks for it there. It outlives the command that created it and ends with its cluster; a local Ray that a command
started and stops ends it at once, so only a cluster that commands join (`--address`) keeps workers warm between
them.

The trainable asks the keeper of its node to run its trial (`run`, a Ray generator: the worker's events stream
back one by one, then the TrialResult). The keeper lends the trial an idle worker of the same environment and
start-up variables, or starts one, and takes it back when the trial ends (its `trial.pool.WorkerPool`):
- each trial still builds a fresh model and reseeds every generator in the worker (as before);
- a trial whose caller is gone (its actor died, it was stopped and asked `stop`, or its stream was closed) ends
  its worker, which is never lent again while a trial runs in it;
- a GPU trial first ends the idle workers of other variables on its GPU, so that no idle framework holds the
  memory its share is to use;
- a worker idle for `idle_s` seconds (SENSITIVITY_WORKER_IDLE_S, default IDLE_S) is ended.
Workers run in the keeper's process tree (each in its own session, ending when the keeper does).
"""
from __future__ import annotations

import json
import os
import queue
import threading
import time

from sensitivity.core.spec import TrialSpec
from sensitivity.trial.pool import WorkerPool, pool_key
from sensitivity.trial.runner import Worker

NAMESPACE = "sensitivity"
KEEPER_NAME = "framework-workers-"
IDLE_S = 600.0
IDLE_VARIABLE = "SENSITIVITY_WORKER_IDLE_S"
POLL_S = 0.5  # how often a waiting trial checks that its caller still wants it


class Keeper:
    """The warm workers of one node, lent to one trial at a time (see the module)."""

    def __init__(self, idle_s: float = IDLE_S):
        self.idle_s = float(idle_s)
        self.pool = WorkerPool()  # the idle workers, by set-up
        self._lent: dict = {}  # lease -> Worker
        self._stopped: set = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._reap, daemon=True).start()

    def run(self, spec_json: str, env: str, variables: dict, lease: str, caller_pid: int):
        """Yield the trial's worker events (dicts), then {"event": "trial_result", ...}: the TrialResult's JSON,
        with whether this trial started its worker and how long that took."""
        spec = TrialSpec.model_validate_json(spec_json)
        worker, cold = self._lend(env, variables, lease)
        events: queue.Queue = queue.Queue()

        def work() -> None:
            try:
                started = time.perf_counter()
                result = worker.run(spec, events.put)
                events.put({"event": "trial_result", "result": json.loads(result.to_json()),
                            "worker": {"cold": cold, "start_s": round(worker.start_s, 3) if cold else 0.0,
                                       "span_s": round(time.perf_counter() - started, 3), "pid": worker.pid}})
            except BaseException as exc:  # a fault of the keeper's side: the trial fails with it, the sweep goes on
                events.put({"event": "trial_error", "error": f"{type(exc).__name__}: {exc}"})

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        checked = time.monotonic()
        try:
            while True:
                try:
                    event = events.get(timeout=POLL_S)
                except queue.Empty:
                    event = None
                if time.monotonic() - checked >= POLL_S:
                    checked = time.monotonic()
                    if lease in self._stopped or not _alive(caller_pid):
                        worker.kill()  # not wanted: its worker ends (again, were it starting), run returns
                if event is None:
                    continue
                yield event
                if event.get("event") in ("trial_result", "trial_error"):
                    return
        except GeneratorExit:  # the stream was closed before the trial's end: no one wants the trial
            worker.kill()
            raise
        finally:
            thread.join(timeout=10)
            if thread.is_alive():  # its trial still runs: the worker is not lent again
                worker.kill()
            self._take_back(env, variables, lease, worker)

    def stop(self, lease: str) -> None:
        """The trial of `lease` was stopped (a scheduler, the actor ending): its worker ends."""
        with self._lock:  # killed under the lock: taken back at the same moment, it is not lent again alive
            self._stopped.add(lease)
            worker = self._lent.get(lease)
            if worker is not None:
                worker.kill()

    def counts(self) -> dict:
        with self._lock:
            return {"idle": self.pool.idle(), "lent": len(self._lent), "started": self.pool.started}

    def _lend(self, env: str, variables: dict, lease: str) -> tuple:
        gpus = variables.get("CUDA_VISIBLE_DEVICES")
        if gpus:  # idle workers of other variables on this GPU would hold memory beside this trial's share
            mine = pool_key(env, variables)
            self.pool.end_idle(where=lambda key: key != mine and dict(key[1]).get("CUDA_VISIBLE_DEVICES") == gpus)
        worker, cold = self.pool.take(env, variables)
        with self._lock:
            self._lent[lease] = worker
        return worker, cold

    def _take_back(self, env: str, variables: dict, lease: str, worker: Worker) -> None:
        with self._lock:
            self._lent.pop(lease, None)
            self._stopped.discard(lease)
        self.pool.give_back(env, variables, worker)

    def _reap(self) -> None:
        while True:
            time.sleep(min(30.0, max(1.0, self.idle_s / 4)))
            self.pool.end_idle(older_than_s=self.idle_s)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


_REMOTE: list = []  # the Ray actor class of Keeper, made once per process


def keeper_here():
    """The keeper actor of this Ray node, created on it if it has none (called inside a Ray actor or task)."""
    # lazy: ray
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if not _REMOTE:
        _REMOTE.append(ray.remote(Keeper))
    node = ray.get_runtime_context().get_node_id()
    idle_s = float(os.environ.get(IDLE_VARIABLE, IDLE_S))
    actor = _REMOTE[0].options(
        name=KEEPER_NAME + node, namespace=NAMESPACE, lifetime="detached", get_if_exists=True, num_cpus=0,
        max_concurrency=256, scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False))
    return actor.remote(idle_s)
