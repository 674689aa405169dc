"""Adversarial examples against a trained model, in the model's own framework; runs inside the worker.

White-box attacks use the adapter's `input_gradient` (of the summed cross-entropy), so each framework's
own automatic differentiation is what is attacked:
- FGSM (Goodfellow et al. 2015): x + eps * sign(grad), one step;
- PGD (Madry et al. 2018): a random start in the L-infinity ball of radius eps, then `PGD_STEPS` steps of
  size 2.5 * eps / PGD_STEPS along sign(grad), each projected back onto the ball.
Every example stays in the data's value range (the training set's minimum and maximum). Transfer attacks
evaluate a model on examples another model's attack made (`evaluate_examples`). Each accuracy comes with which
samples were classified correctly (packed bits), so that two models can be compared on the samples both get
right, and with the share of samples whose input gradient is exactly zero: FGSM leaves those unperturbed, and a
large share is the mark of gradient masking.

A request (one JSON line to the worker, `{"attack": {...}}`) names the trained trial's spec, its weights,
the dataset, how many test samples (None: the whole test set), the attacks and epsilons, where to save the
examples it makes, and other models' example files to evaluate on.
"""
from __future__ import annotations

import numpy as np

from sensitivity import frameworks
from sensitivity.core.attacks import ATTACKS, PGD_STEPS  # ATTACKS: read here by the tests, as attacks.ATTACKS
from sensitivity.core.correctness import pack
from sensitivity.core.models import get_model, layers_from_dicts
from sensitivity.core.spec import TrialSpec
from sensitivity.core.paths import atomic_write
from sensitivity.datasets.base import Dataset
from sensitivity.trial.loop import accuracy, correct_samples  # accuracy: read here by the tests, as attacks.accuracy

GRADIENT_BATCH = 250


def fgsm(adapter, x: np.ndarray, y: np.ndarray, eps: float, low: float, high: float, rng=None) -> np.ndarray:
    return np.clip(x + eps * np.sign(_gradient(adapter, x, y)), low, high).astype(x.dtype)


def pgd(adapter, x: np.ndarray, y: np.ndarray, eps: float, low: float, high: float, rng=None) -> np.ndarray:
    if eps == 0:
        return x.copy()
    step = 2.5 * eps / PGD_STEPS
    rng = rng or np.random.default_rng(0)
    adv = np.clip(x + rng.uniform(-eps, eps, x.shape).astype(x.dtype), low, high)
    for _ in range(PGD_STEPS):
        adv = adv + step * np.sign(_gradient(adapter, adv, y))
        adv = np.clip(np.clip(adv, x - eps, x + eps), low, high).astype(x.dtype)
    return adv


ATTACK_FUNCTIONS = {"fgsm": fgsm, "pgd": pgd}


def _gradient(adapter, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.concatenate([adapter.input_gradient(x[i:i + GRADIENT_BATCH], y[i:i + GRADIENT_BATCH])
                           for i in range(0, len(y), GRADIENT_BATCH)])


def run_request(request: dict, threads: int) -> dict:
    """Load the trained model, attack it (white-box) and evaluate it on other models' examples: accuracies, and
    which samples it classifies correctly (packed, `sensitivity.core.correctness`), on the first `samples` test samples
    (all of them when None)."""

    spec = TrialSpec.model_validate(request["spec"])
    data = Dataset.load_npz(request["data"])
    x, y = data.x_test[: request.get("samples")], data.y_test[: request.get("samples")]
    low, high = float(data.x_train.min()), float(data.x_train.max())
    model = layers_from_dicts(request["model"], spec.layers) if spec.layers else get_model(request["model"])
    model = model.resolve(data.classes)
    adapter = frameworks.load_adapter(spec.framework)
    adapter.setup(threads, spec.device, spec.seed)
    adapter.build(model, data.input_shape, data.classes, load_weights(request["weights"]), spec, total_steps=1)
    clean = correct_samples(adapter, x, y)
    result = {"clean": float(clean.mean()), "samples": len(y), "white_box": {}, "transfer": {},
              "correct": {"clean": pack(clean)}, "transfer_correct": {}}
    examples = {}
    if request.get("attacks"):
        gradient = _gradient(adapter, x, y)  # at the clean inputs: FGSM's at every eps, and the masking check
        result["zero_gradient"] = float(np.mean(~np.any(gradient.reshape(len(y), -1) != 0, axis=1)))

    def attacked(attack: str, eps: float, rng) -> np.ndarray:
        if attack == "fgsm":  # the clean gradient, computed once
            return np.clip(x + eps * np.sign(gradient), low, high).astype(x.dtype)
        return ATTACK_FUNCTIONS[attack](adapter, x, y, eps, low, high, rng)

    for attack in request.get("attacks", ()):
        rng = np.random.default_rng(spec.seed)
        result["white_box"][attack], result["correct"][attack] = [], []
        for i, eps in enumerate(request["eps"]):
            adv = attacked(attack, eps, rng)
            examples[f"{attack}_{i}"] = adv
            correct = correct_samples(adapter, adv, y)
            result["white_box"][attack].append(float(correct.mean()))
            result["correct"][attack].append(pack(correct))
    check_eps = request.get("check_eps")
    if check_eps and request.get("attacks"):  # the strongest attack once more, at the check's radius (not a curve)
        attack = "pgd" if "pgd" in request["attacks"] else request["attacks"][-1]
        adv = attacked(attack, check_eps, np.random.default_rng(spec.seed))
        result["check"] = {"attack": attack, "eps": float(check_eps),
                           "accuracy": float(correct_samples(adapter, adv, y).mean())}
    if request.get("save_examples") and examples:
        with atomic_write(request["save_examples"]) as f:
            np.savez(f, **examples)
    for source, path in (request.get("evaluate") or {}).items():
        result["transfer"][source], result["transfer_correct"][source] = evaluate_examples(
            adapter, path, y, request["eps"])
    return result


def evaluate_examples(adapter, path: str, y: np.ndarray, eps: list) -> tuple:
    """({attack: [accuracy per eps]}, {attack: [packed correctness per eps]}) of the model on another model's
    saved examples."""
    accuracies, correctness = {}, {}
    with np.load(path) as saved:
        for name in sorted(saved.files):
            attack, index = name.rsplit("_", 1)
            correct = correct_samples(adapter, saved[name], y)
            accuracies.setdefault(attack, [None] * len(eps))[int(index)] = float(correct.mean())
            correctness.setdefault(attack, [None] * len(eps))[int(index)] = pack(correct)
    return accuracies, correctness


def load_weights(path: str) -> list:
    """The [(kernel, bias)] a trial saved (`sensitivity.trial.loop.save_weights`)."""
    with np.load(path) as saved:
        layers = len([n for n in saved.files if n.startswith("kernel_")])
        return [(saved[f"kernel_{i}"], saved[f"bias_{i}"]) for i in range(layers)]
