"""The Ray node of each trial, known from the moment Ray places it, and whether a node is lost.

`NodeOfTrial` (a Tune callback) asks each trial's actor for its node when the actor has started or is reused,
before the trial runs, and tells the run's searcher, which records it (`ray_node_id`). A trial whose actor dies
is then judged by `node_lost`: an orphan, run again, where its node was lost at any moment (before its first
epoch report too), a final FAIL where the node lives; without the 30 s wait for Ray's health check where the
node's raylet answers or refuses at once.
"""
from __future__ import annotations

import socket
import time
from typing import Optional

from ray.tune import Callback

_SEARCHERS: dict = {}  # driver id -> this process's searcher of that run


def register(driver_id: str, searcher) -> None:
    """`searcher` is told the node of each trial of the run of `driver_id` (its `placed` method)."""
    _SEARCHERS[driver_id] = searcher


def searcher_of(driver_id: str):
    """The searcher of the run of `driver_id` in this process (None: none registered)."""
    return _SEARCHERS.get(driver_id)


def node_lost(node_id: str, wait_s: float = 30.0) -> bool:
    """Whether Ray's node `node_id` is lost, judged at once where Ray says it is dead, where its raylet refuses
    a connection (no process listens: Ray's health check marks the node dead seconds later) or where its raylet
    answers (the node lives: the actor's death is the trial's). Only a raylet that gives no answer at all (a
    host cut off) is waited on, up to `wait_s`, for Ray's health check to decide."""

    # lazy: ray
    import ray
    deadline = time.monotonic() + wait_s
    while True:
        try:
            nodes = ray.nodes()
        except Exception:  # Ray itself is gone (a local Ray's death ends the run by its own watch): no node loss
            return False
        entry = next((n for n in nodes if n.get("NodeID") == node_id), None)
        if entry is None or not entry.get("Alive"):
            return True
        answers = raylet_answers(entry)
        if answers is not None:
            return not answers
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)


def raylet_answers(node: dict, timeout_s: float = 1.0) -> Optional[bool]:
    """True where the raylet of `node` (an entry of ray.nodes()) accepts a connection, False where it is
    refused (its process is gone), None where no answer came within `timeout_s`."""
    try:
        address = (node["NodeManagerAddress"], int(node["NodeManagerPort"]))
        with socket.create_connection(address, timeout=timeout_s):
            return True
    except ConnectionRefusedError:
        return False
    except (OSError, KeyError, TypeError, ValueError):
        return None


def _node_here(actor) -> str:
    # lazy: ray
    import ray
    return ray.get_runtime_context().get_node_id()


class NodeOfTrial(Callback):
    """Tells the run's searcher the Ray node of each trial as soon as Ray has placed it: when its actor has
    started (or is reused), before it runs. Holds only the driver's id, so it pickles without secrets."""

    def __init__(self, driver_id: str):
        self.driver_id = driver_id

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        # lazy: ray
        import ray
        searcher, actor = searcher_of(self.driver_id), trial.temporary_state.ray_actor
        if searcher is None or actor is None:
            return
        try:  # a call on the actor, which runs before the trial (its tasks run in order)
            node = ray.get(actor.__ray_call__.remote(_node_here), timeout=5.0)
        except Exception:  # the actor or its node died already: Tune reports the trial's error next
            return
        searcher.placed(trial.trial_id, node)
