"""scripts/setup.sh picks GPU builds when nvidia-smi finds a driver, and the CPU set, unchanged, otherwise.
Run in its dry-run mode (it prints the install commands) with a stand-in nvidia-smi on PATH: the GPU
hardware is the only thing faked."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INSTALL = "+ .venv/bin/pip install -q -c constraints/modern.txt -r constraints/modern-requirements.txt -e .[all]"


def setup(tmp_path, cuda=None, **env):
    if cuda is not None:
        fake = tmp_path / "nvidia-smi"
        fake.write_text(f"#!/bin/sh\necho '| NVIDIA-SMI 580.95   Driver Version: 580.95   CUDA Version: {cuda} |'\n")
        fake.chmod(0o755)
    path = os.pathsep.join([str(tmp_path)] + [p for p in os.environ["PATH"].split(os.pathsep)
                                               if not (Path(p) / "nvidia-smi").exists()])
    out = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "modern"], capture_output=True, text=True,
                         timeout=60, env={**os.environ, "PATH": path, "SENSITIVITY_SETUP_DRY_RUN": "1", **env})
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines(), out.stderr


def test_without_a_driver_the_cpu_set_only(tmp_path):
    lines, _ = setup(tmp_path)
    assert lines == ["setup: building .venv (modern)", "+ ensure_venv .venv", CPU_INSTALL]


@pytest.mark.parametrize("cuda, jax", [("13.0", "jax[cuda13]"), ("12.4", "jax[cuda12]")])
def test_with_a_driver_gpu_builds_over_the_cpu_set(tmp_path, cuda, jax):
    lines, _ = setup(tmp_path, cuda)
    assert lines[:3] == ["setup: building .venv (modern)", "+ ensure_venv .venv", CPU_INSTALL]
    assert "+ .venv/bin/pip uninstall -q -y tensorflow-cpu" in lines
    gpu = lines[-1].split()
    assert "torch===2.13.0" in gpu and "tensorflow[and-cuda]==2.21.0" in gpu and f"{jax}==0.10.2" in gpu


def test_an_old_driver_or_gpu_off_keeps_the_cpu_set(tmp_path):
    lines, err = setup(tmp_path, "11.4")
    assert lines[-1] == CPU_INSTALL and "supports CUDA 11 only" in err
    lines, _ = setup(tmp_path, "13.0", SENSITIVITY_GPU="no")
    assert lines[-1] == CPU_INSTALL
