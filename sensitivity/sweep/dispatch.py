"""The Ray Tune side: the trainable each Ray actor runs, in a warm framework worker of its node's keeper.

Actors are reused across trials (Tuner(reuse_actors=True)); the framework worker processes are not theirs but
the keeper's (`sweep.keeper`), one detached actor per node, so that a worker outlives the command that started
it and a framework is imported once per node and slot for as long as the cluster lives. A trial's figures never
depend on which trials ran before it in a worker: each builds a fresh model and reseeds every generator. On a GPU
the worker is limited to the trial's share of the GPU (`gpu.allocator_variables`), and idle workers of other
frameworks on that GPU are ended first, so that no idle framework holds GPU memory. The trainable reports one
Tune result per epoch, carrying that epoch's figures and its point of the curve alone (`point_json`: the searcher
keeps the curve it has seen, so a report's size, and what Tune sends, logs and the searcher parses, does not grow
with the epochs), and a final one carrying the whole TrialResult, whose curve is then sent once, whose spec is the
one that ran (`device: gpu:N`, N the node's GPU Ray assigned) and whose env says whether the trial started its
worker (`worker`); a trial stopped by a scheduler ends its worker. A metric without a value (a failed trial, a
diverged epoch) is left out of the result, never reported as None.

Ray Tune keeps every trial of a run in the driver's memory until the run ends (ray-project/ray#64231): its
last result and statistics of each of its metrics. `ForgetFinished` drops both once a trial is told to the
study, which holds all of it.
"""
from __future__ import annotations

import json
import os
import uuid

from ray.tune import Callback

from sensitivity.core.spec import TrialResult, TrialSpec
from sensitivity.sweep import tune_files
from sensitivity.sweep.keeper import keeper_here
from sensitivity.trial.runner import worker_setup


def without_none(metrics: dict) -> dict:
    """A Tune result never carries a None metric: a scheduler multiplies it (ASHA's metric_op * value raises
    TypeError outside Tune's error handling); a result without the key is one the scheduler ignores."""
    return {k: v for k, v in metrics.items() if v is not None}


def epoch_metrics(event: dict, elapsed: float) -> dict:
    return without_none({"epoch": event["epoch"], "val_accuracy": event["val_accuracy"],
                         "accuracy": event["test_accuracy"], "loss": event["train_loss"], "train_time_s": elapsed,
                         "final": False})


def epoch_report(event: dict, elapsed: float) -> dict:
    """One epoch's Tune result: its metrics, and its point of the curve (the worker's epoch event) as JSON text
    (Tune flattens nested dicts), the one point only."""
    point = {k: v for k, v in event.items() if k != "event"}
    return {**epoch_metrics(event, elapsed), "point_json": json.dumps(point)}


def trainable(config: dict) -> None:
    """Run one trial in a warm worker of this node's keeper; report each epoch, then the TrialResult."""
    # lazy: ray
    import ray
    from ray import tune

    spec = TrialSpec.model_validate(config["spec"])
    gpu_ids, share = ray.get_gpu_ids(), None
    if gpu_ids:  # Ray made the assigned GPU the only visible one (the driver allows at most one per trial)
        spec = spec.model_copy(update={"device": "gpu:0"})
        share = tune.get_context().get_trial_resources().required_resources.get("GPU")
    env, variables = worker_setup(spec, share)
    node_id = ray.get_runtime_context().get_node_id()  # in each report: a lost node is then named
    elapsed = 0.0
    last_epoch = None if spec.iterations else spec.epochs

    def on_event(event: dict) -> None:
        nonlocal elapsed
        if event.get("event") == "epoch":
            elapsed += event["seconds"]
            if event["epoch"] == last_epoch:
                return  # the final report stands for the last epoch, so a scheduler cannot cut it off
            tune.report({**epoch_report(event, elapsed), "ray_node_id": node_id})

    keeper, lease, payload = keeper_here(), uuid.uuid4().hex, None
    try:
        for ref in keeper.run.remote(spec.model_dump_json(), env, variables, lease, os.getpid()):
            event = ray.get(ref)
            if event["event"] == "trial_result":
                payload = event["result"]
                payload["env"]["worker"] = event["worker"]
            elif event["event"] == "trial_error":
                payload = json.loads(TrialResult.failure("failed", event["error"], spec).to_json())
            else:
                on_event(event)
    finally:
        if payload is None:  # stopped by the scheduler (or the actor is ending): end the running trial too
            keeper.stop.remote(lease)
    payload["env"].update(ray_node_id=ray.get_runtime_context().get_node_id(), ray_actor_pid=os.getpid())
    if gpu_ids:  # the spec as it ran: the node's GPU, and the share of it the trial had
        if payload.get("spec") and str(gpu_ids[0]).isdigit():
            payload["spec"]["device"] = f"gpu:{gpu_ids[0]}"
        payload["env"].update({"ray_gpu_ids": [str(i) for i in gpu_ids], "gpu_share": share,
                               "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")})
    metrics = without_none({k: payload.get(k) for k in ("val_accuracy", "accuracy", "loss", "train_time_s")})
    # as JSON text: Tune flattens nested dicts in results ("result/status")
    tune.report({**metrics, "epoch": len(payload["curve"]), "final": True, "result_json": json.dumps(payload)})


class ForgetFinished(Callback):
    """Once a trial has completed (the searcher has told the study: Tune calls it first), Tune keeps of it
    only the scalars of its last result: not the TrialResult's JSON nor the curve, and no statistics of its
    metrics (max, min, averages: about 1 KiB a metric, which no part of the sweep reads)."""

    BULKY = ("result_json", "point_json")

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        metadata = trial.run_metadata
        metadata.last_result = {k: v for k, v in metadata.last_result.items() if k not in self.BULKY}
        metadata.metric_analysis.clear()
        metadata.metric_n_steps.clear()


class TrialFolders(Callback):
    """Notes each trial's folders when it starts (`tune_files.note_folders`), so that a failed trial keeps the tail
    of what Ray wrote of it. Holds nothing, so it pickles as it is."""

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        try:
            working = trial.storage.trial_working_directory
        except Exception:  # Tune has not named the trial's folder
            working = None
        tune_files.note_folders(trial.trial_id, trial.local_path, working)
