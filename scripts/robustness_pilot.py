"""Pilot for the robustness protocol's eps grid: on held-out seeds (never the main job's 0..9), train one
framework's MNIST default at a cut budget on DATASET's own model, attack it white-box (PGD, FGSM) on a fine grid,
and print the grid it proposes: the radii where PGD's accuracy relative to clean falls through 0.9 .. 0.05
(evenly spaced from 0.9 to 0.05, so that PGD's accuracy at the largest radius passes the protocol's floor
check; read off the pilot's curve, rounded to 0.01). The chosen grid is committed by
hand to `eps_by_dataset` in search_spaces/robustness.yaml; nothing here writes it.

Usage: .venv/bin/python scripts/robustness_pilot.py DATASET [--seeds 1000,1001] [--epochs 3] [--points 4]
       [--samples N (the first N test samples; default all)]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

FINE = (0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.25, 0.3)


def proposed(eps, relative, points: int = 4, top: float = 0.9, bottom: float = 0.05) -> list:
    """The radii where the (decreasing) relative accuracy curve crosses `points` levels evenly spaced from
    `top` to `bottom`, by linear interpolation, rounded to 0.01, increasing and unique."""
    eps, relative = np.asarray([0.0, *eps]), np.minimum.accumulate(np.asarray([1.0, *relative]))
    out = []
    for level in np.linspace(top, bottom, points):
        if relative[-1] > level:
            break  # the curve never falls this low on the fine grid
        i = int(np.argmax(relative <= level))
        x0, x1, y0, y1 = eps[i - 1], eps[i], relative[i - 1], relative[i]
        at = x1 if y0 == y1 else x0 + (y0 - level) * (x1 - x0) / (y0 - y1)
        out.append(max(0.01, round(round(at / 0.01) * 0.01, 2)))
    return sorted(set(out))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--seeds", default="1000,1001", help="held-out seeds (the main job uses 0..9)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--default", default="mxnet-train-mnist", help="the default whose configuration trains")
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--points", type=int, default=4)
    parser.add_argument("--samples", type=int, help="attack the first N test samples (default: all)")
    args = parser.parse_args(argv)
    from sensitivity import datasets
    from sensitivity.config.defaults import load_table
    from sensitivity.core.spec import TrialSpec
    from sensitivity.trial.runner import Worker

    seeds = [int(s) for s in args.seeds.split(",")]
    if set(seeds) & set(range(10)):
        print(f"robustness_pilot: --seeds {args.seeds}: the main job's seeds; allowed: 10 or above", file=sys.stderr)
        return 2
    entry = next(e for e in load_table() if e.name == args.default)
    config = {k: (tuple(v) if isinstance(v, list) else v) for k, v in entry.config.items()
              if k not in ("epochs", "iterations", "stepvalues")}
    if config.get("lr_policy") == "multistep":
        config["lr_policy"] = "fixed"  # a cut budget: the step after epoch 10 never comes
    data = datasets.prepare(args.dataset)
    model = datasets.REGISTRY[args.dataset].default_model
    grid = [0.0, *FINE]
    curves = {"pgd": [], "fgsm": []}
    with tempfile.TemporaryDirectory() as tmp:
        spec0 = TrialSpec(framework=args.framework, dataset=args.dataset, epochs=args.epochs, **config)
        worker = Worker.for_spec(spec0)
        try:
            for seed in seeds:
                weights = str(Path(tmp) / f"pilot-{seed}.npz")
                spec = spec0.model_copy(update={"seed": seed, "keep_weights": weights})
                result = worker.run(spec)
                if result.status != "ok":
                    print(f"robustness_pilot: seed {seed}: training {result.status}: {result.reason}", file=sys.stderr)
                    return 1
                request = {"spec": spec.model_copy(update={"keep_weights": None}).model_dump(mode="json"),
                           "data": str(data), "model": model, "weights": weights, "samples": args.samples,
                           "attacks": ["fgsm", "pgd"], "eps": grid, "save_examples": None}
                attacked = worker.attack(request, timeout=900)
                print(f"{args.dataset} seed {seed}: {args.default} on {args.framework}, {args.epochs} epochs, clean "
                      f"{attacked['clean']:.3f} on {attacked['samples']} test samples", flush=True)
                for attack in curves:
                    curves[attack].append(np.asarray(attacked["white_box"][attack]) / attacked["clean"])
        finally:
            worker.close()
    for attack, rows in curves.items():
        mean = np.mean(rows, axis=0)
        print(f"{attack} relative accuracy, mean of seeds {args.seeds}: " +
              ", ".join(f"{e:g}:{m:.3f}" for e, m in zip(grid[1:], mean[1:])))
    chosen = proposed(grid[1:], np.mean(curves["pgd"], axis=0)[1:], args.points)
    print(f"proposed eps grid for {args.dataset} (PGD relative accuracy 0.9 .. 0.05): {chosen}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
