"""GPU trials never train on the CPU under a GPU label. This machine has no GPU and CPU-only builds, so a GPU
trial of every framework must fail its placement check before training, with the reason, and no training
time; `sensitivity frameworks` says which builds can use a GPU and why not; the trial command refuses a GPU
trial that cannot run in one line. What a GPU itself reports is checked by scripts/gpu_check.sh on one."""
import subprocess
import sys
import time

import pytest
from test_monitor import FakeNvml

from sensitivity import frameworks
from sensitivity.frameworks import gpu
from sensitivity.core.spec import TrialSpec
from sensitivity.trial import monitor
from sensitivity.trial.runner import run_trial

SLOW = pytest.mark.slow  # TensorFlow's import is most of a trial here; one TF-backed case stays in the default run


def usable(name):
    return frameworks.probe(name)[1]


@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax", "mxnet",
                                       pytest.param("keras", marks=SLOW), pytest.param("pytensor", marks=SLOW),
                                       pytest.param("chainer", marks=SLOW), pytest.param("theano", marks=SLOW)])
def test_a_gpu_trial_whose_framework_sees_no_gpu_fails_before_training(framework, monkeypatch):
    if not usable(framework):
        pytest.skip(f"{framework} is not installed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # as Ray sets it for a trial without a GPU
    result = run_trial(TrialSpec(framework=framework, dataset="digits", model="mlp", device="gpu", epochs=1))
    assert result.status == "failed", result
    assert f"framework {framework} sees no GPU (" in result.reason and "CUDA_VISIBLE_DEVICES=''" in result.reason
    assert result.train_time_s is None and result.curve == [] and result.accuracy is None
    assert result.env["device"] == "gpu"


def test_require_names_what_the_framework_sees(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    with pytest.raises(gpu.PlacementError, match=r"framework torch sees no GPU \(built without CUDA; "
                                                 r"CUDA_VISIBLE_DEVICES='3'\)"):
        gpu.require("torch", 0, 0, "built without CUDA")
    with pytest.raises(gpu.PlacementError, match=r"sees 1 GPU\(s\), not gpu:1"):
        gpu.require("torch", 1, 1, "")
    gpu.require("torch", 1, 0, "")


def test_a_model_left_on_the_cpu_fails_the_check():
    gpu.check_placed("jax", {"model": "gpu:cuda:0", "data": "/job:localhost/replica:0/task:0/device:GPU:0"})
    with pytest.raises(gpu.PlacementError, match=r"framework tensorflow sees no GPU \(placed on model: "
                                                 r"/device:CPU:0\)"):
        gpu.check_placed("tensorflow", {"model": "/device:CPU:0", "data": "/device:GPU:0"})


def test_the_gpu_column_gives_a_reason():
    assert gpu.column(True, (False, "this build is CPU-only (tensorflow-cpu)"), ("580.1", None)) == \
        "no: this build is CPU-only (tensorflow-cpu)"
    assert gpu.column(True, (True, "CUDA 12.8"), (None, "no NVIDIA driver (NVML: not found)")) == \
        "no: no NVIDIA driver (NVML: not found)"
    assert gpu.column(True, (True, "CUDA 12.8"), ("580.1", None)) == "yes (CUDA 12.8; driver 580.1)"
    assert gpu.column(False, None, ("580.1", None)) == "-"


def test_allocator_variables_limit_each_framework_to_the_share():
    variables = gpu.allocator_variables(0.25)
    assert variables == {"SENSITIVITY_GPU_SHARE": "0.25", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                         "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.250", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.skipif(not usable("tensorflow") or gpu.build("tensorflow")[0], reason="needs tensorflow-cpu")
def test_frameworks_prints_a_gpu_column_with_reasons():
    out = cli("frameworks")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines()}
    assert lines["framework"].rstrip().endswith("GPU")
    assert lines["tensorflow"].rstrip().endswith("no: this build is CPU-only (tensorflow-cpu)")
    if usable("theano"):
        assert "no: Theano has no GPU backend on current CUDA" in lines["theano"]


@pytest.mark.skipif(not usable("theano"), reason="needs theano")
def test_a_gpu_trial_of_a_framework_without_a_gpu_build_is_refused_in_one_line():
    out = cli("trial", "--framework", "theano", "--dataset", "digits", "--device", "gpu")
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("sensitivity trial: --device gpu: theano cannot use a GPU here: Theano has no GPU "
                               "backend on current CUDA")


class MigNvml(FakeNvml):
    """A MIG instance: NVML refuses its utilisation, as it does on MIG."""

    def nvmlDeviceGetUtilizationRates(self, handle):
        raise self.NVMLError("Not Supported")


class BrokenNvml(FakeNvml):
    def nvmlDeviceGetMemoryInfo(self, handle):
        raise RuntimeError("driver gone")


def test_nvml_refusals_land_in_gpu_error_and_sampling_goes_on(monkeypatch):
    monkeypatch.setattr(monitor, "SAMPLE_SECONDS", 0.01)
    monkeypatch.setattr(monitor, "open_nvml", lambda device: monitor.NvmlDevice(MigNvml(), 0))
    with monitor.ResourceMonitor("gpu") as m:
        time.sleep(0.2)
    assert m.gpu_error == "NVML utilisation unavailable: Not Supported"
    assert m.gpu["utilization_percent"] is None and m.gpu["peak_memory_mb"] == 3 * 1024
    assert m.gpu["energy_j"] == pytest.approx(5.0)
    monkeypatch.setattr(monitor, "open_nvml", lambda device: monitor.NvmlDevice(BrokenNvml(), 0))
    with monitor.ResourceMonitor("gpu") as m:
        time.sleep(0.1)
    assert m.gpu_error == "NVML sampling stopped: RuntimeError: driver gone" and m.gpu["peak_memory_mb"] is None


@pytest.mark.skipif(not usable("torch"), reason="needs torch")
def test_deterministic_sets_the_framework_flags_and_records_them():
    result = run_trial(TrialSpec(framework="torch", dataset="digits", model="mlp", epochs=1, deterministic=True))
    assert result.status == "ok", result.reason
    assert result.env["numerics"]["deterministic_algorithms"] is True
    assert result.env["numerics"]["cudnn_deterministic"] is True and result.env["numerics"]["cudnn_benchmark"] is False
    assert result.env["determinism"] == dict(zip(("flags", "remaining"), gpu.DETERMINISM["torch"]))
    assert result.spec["deterministic"] is True
