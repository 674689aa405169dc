"""Every framework usable here runs a trial end to end through its own environment's worker, from Caffe's
LeNet configuration (import-caffe); the full 5-epoch accuracy check is the slow test below."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sensitivity import frameworks

CAFFE = Path(__file__).resolve().parents[1] / "search_spaces" / "caffe"
RUNS = [(name, backend) for name, info in frameworks.FRAMEWORKS.items()
        for backend in (info.backends or (None,))]


def usable(name):
    version, ok, why = frameworks.probe(name)
    if not ok:
        pytest.skip(f"{name}: {why}")


def trial(*args, timeout=900):
    proc = subprocess.run([sys.executable, "-m", "sensitivity.cli", "trial", *map(str, args), "--json"],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def lenet_config(tmp_path_factory):
    out = tmp_path_factory.mktemp("caffe") / "lenet.yaml"
    subprocess.run([sys.executable, "-m", "sensitivity.cli", "import-caffe", str(CAFFE / "lenet_solver.prototxt"),
                    "--out", str(out)], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("name, backend", RUNS, ids=[f"{n}-{b}" if b else n for n, b in RUNS])
def test_caffe_lenet_configuration_runs(lenet_config, name, backend):
    usable(name)
    extra = ["--backend", backend] if backend else []
    result = trial("--config", lenet_config, "--framework", name, *extra, "--dataset", "mnist5k",
                   "--iterations", 40, "--threads", 1)
    assert result["status"] == "ok", result["reason"] + result["stderr_tail"]
    assert result["steps"] == 40 and result["spec"]["lr_policy"] == "inv" and result["params"] == 431_080
    assert result["accuracy"] > 0.5  # 40 steps of Caffe's schedule already learn
    if backend:
        assert backend in result["env"]["framework_version"]
    kernels = result["env"]["kernels"]  # the CPU kernels its numbers came from (sensitivity.trial.kernels)
    assert kernels["isa"] not in ("", "unknown") and "probe_error" not in kernels, kernels
    if name in ("tensorflow", "mxnet") or (name, backend) == ("keras", "tensorflow"):
        assert kernels["onednn_isa"] and kernels["isa"].startswith("oneDNN "), kernels  # oneDNN's own report
    if name == "torch":
        assert kernels["aten_cpu_capability"] and kernels["mkl"], kernels


@pytest.mark.slow
@pytest.mark.parametrize("name, backend", RUNS, ids=[f"{n}-{b}" if b else n for n, b in RUNS])
def test_lenet_reaches_093_in_five_epochs(name, backend):
    usable(name)
    extra = ["--backend", backend] if backend else []
    result = trial("--framework", name, *extra, "--dataset", "mnist5k", "--model", "lenet5", "--batch-size", 64,
                   "--lr", 0.05, "--optimizer", "momentum", "--momentum", 0.9, "--epochs", 5, timeout=1800)
    assert result["status"] == "ok" and result["accuracy"] >= 0.93, result
