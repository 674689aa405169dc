"""The Ray Tune side: the trainable each Ray actor runs, keeping one warm framework worker per actor.

Actors are reused across trials (Tuner(reuse_actors=True)), and so is the framework worker process each
actor owns, so a framework is imported once per actor. The trainable reports one Tune result per epoch
and a final one carrying the whole TrialResult; a trial stopped by a scheduler ends its worker. A metric
without a value (a failed trial, a diverged epoch) is left out of the result, never reported as None.
"""
from __future__ import annotations

import json
import os

from sensitivity.spec import TrialSpec

_WORKERS: dict = {}  # per actor process: (env, start-up variables, visible GPUs) -> Worker


def _worker_for(spec: TrialSpec):
    from sensitivity import frameworks
    from sensitivity.trial.runner import Worker

    variables = frameworks.worker_variables(spec)
    if spec.threads:  # OpenMP's pool is sized at import: a trial of N CPUs should not start more threads
        variables["OMP_NUM_THREADS"] = str(spec.threads)
    key = (frameworks.FRAMEWORKS[spec.framework].env, tuple(sorted(variables.items())),
           os.environ.get("CUDA_VISIBLE_DEVICES"))
    if key not in _WORKERS:
        _WORKERS[key] = Worker(key[0], variables)
    return _WORKERS[key]


def without_none(metrics: dict) -> dict:
    """A Tune result never carries a None metric: a scheduler multiplies it (ASHA's metric_op * value raises
    TypeError outside Tune's error handling); a result without the key is one the scheduler ignores."""
    return {k: v for k, v in metrics.items() if v is not None}


def epoch_metrics(event: dict, elapsed: float) -> dict:
    return without_none({"epoch": event["epoch"], "val_accuracy": event["val_accuracy"],
                         "accuracy": event["test_accuracy"], "loss": event["train_loss"], "train_time_s": elapsed,
                         "final": False})


def trainable(config: dict) -> None:
    """Run one trial in this actor's warm worker; report each epoch, then the TrialResult."""
    import ray
    from ray import tune

    spec = TrialSpec.model_validate(config["spec"])
    if ray.get_gpu_ids():  # Ray made the assigned GPUs the only visible ones
        spec = spec.model_copy(update={"device": "gpu:0"})
    worker = _worker_for(spec)
    elapsed = 0.0
    curve = []
    last_epoch = None if spec.iterations else spec.epochs

    def on_event(event: dict) -> None:
        nonlocal elapsed
        if event.get("event") == "epoch":
            elapsed += event["seconds"]
            curve.append({k: v for k, v in event.items() if k != "event"})
            if event["epoch"] == last_epoch:
                return  # the final report stands for the last epoch, so a scheduler cannot cut it off
            tune.report({**epoch_metrics(event, elapsed), "curve_json": json.dumps(curve)})

    finished = False
    try:
        result = worker.run(spec, on_event)
        finished = True
    finally:
        if not finished:  # stopped by the scheduler (or the actor is ending): end the running trial too
            worker.kill()
    payload = json.loads(result.to_json())
    payload["env"]["ray_node_id"] = ray.get_runtime_context().get_node_id()
    metrics = without_none({k: payload.get(k) for k in ("val_accuracy", "accuracy", "loss", "train_time_s")})
    # as JSON text: Tune flattens nested dicts in results ("result/status")
    tune.report({**metrics, "epoch": len(payload["curve"]), "final": True, "result_json": json.dumps(payload)})
