"""Warm framework workers kept between trials, by their set-up: the one pool of every owner of workers.

A worker (`runner.Worker`) costs seconds to start (its interpreter, the framework's import, the first compile),
so an owner that runs many trials or attacks keeps it for the next one of the same set-up: the same environment
and start-up variables (`runner.worker_setup`: the Keras backend, threads, determinism, the GPU share), whose
`pool_key` is the pool's key. The keeper actor of each Ray node (`sweep.keeper`) and the robustness experiment
(`experiments.robustness`) each make one `WorkerPool`; `runner.new_worker` is the one factory of workers, which
the pool and `Worker.for_spec` call.

A pool lends an idle worker of the key asked (or a new one, started by its first trial) and takes it back
after; a worker that died is not lent again. Idle workers can be ended by key (those holding a GPU another
set-up is to use), by age (`end_idle`), or all (`close`).
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Optional

from sensitivity.trial.runner import Worker, new_worker


def pool_key(env: str, variables: Optional[dict] = None) -> tuple:
    """The key of a worker's set-up: its environment and its start-up variables, sorted."""
    return env, tuple(sorted((variables or {}).items()))


class WorkerPool:
    """Idle workers by `pool_key`, lent one trial at a time; safe to share between threads."""

    def __init__(self):
        self._idle: dict = {}  # key -> [(Worker, time it was given back)], the last given back last
        self._lock = threading.Lock()
        self.started = 0  # workers this pool made (each started by its first trial)

    def take(self, env: str, variables: Optional[dict] = None) -> tuple:
        """(an idle worker of this set-up, else a new one not yet started; whether it is new)."""
        key = pool_key(env, variables)
        with self._lock:
            idle = self._idle.get(key, [])
            while idle and not idle[-1][0].alive():
                idle.pop()
            if idle:
                return idle.pop()[0], False
            self.started += 1
        return new_worker(env, variables), True

    def give_back(self, env: str, variables: Optional[dict], worker: Worker) -> None:
        """Keep `worker` for the next trial of its set-up; a worker that died is dropped."""
        if not worker.alive():
            return
        with self._lock:
            self._idle.setdefault(pool_key(env, variables), []).append((worker, time.monotonic()))

    @contextlib.contextmanager
    def lent(self, env: str, variables: Optional[dict] = None):
        """A worker of this set-up for the block, given back after it."""
        worker, _ = self.take(env, variables)
        try:
            yield worker
        finally:
            self.give_back(env, variables, worker)

    def end_idle(self, older_than_s: Optional[float] = None, where: Optional[Callable[[tuple], bool]] = None) -> int:
        """End the idle workers given back more than `older_than_s` seconds ago (any, with None) whose key
        `where` takes (any, with None); how many were ended."""
        now, ending = time.monotonic(), []
        with self._lock:
            for key, idle in self._idle.items():
                if where is not None and not where(key):
                    continue
                ending += [w for w, back in idle if older_than_s is None or now - back > older_than_s]
                idle[:] = [(w, back) for w, back in idle if older_than_s is not None and now - back <= older_than_s]
        for worker in ending:
            worker.close()
        return len(ending)

    def idle(self) -> int:
        with self._lock:
            return sum(len(idle) for idle in self._idle.values())

    def close(self) -> None:
        """End every idle worker."""
        self.end_idle()
