"""What a result records about where it ran: versions, host, CPU, GPU, git revision, seed."""
from __future__ import annotations

import functools
import platform
import socket
import subprocess
import sys

import numpy as np

from sensitivity.core import envs, semantics
from sensitivity.trial import kernels
from sensitivity.trial.monitor import gpu_name


@functools.lru_cache(maxsize=None)
@functools.lru_cache(maxsize=None)
def git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(envs.REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine(spec) -> dict:
    """What this process knows of where `spec` runs, with or without a framework: host, CPU, git, seed."""
    return {
        "framework": spec.framework,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": kernels.cpu_model(),
        "device": spec.device,
        "git_revision": git_revision(),
        "seed": spec.seed,
    }


def describe(spec, adapter, threads: int, model_name: str, gpu_name=None) -> dict:
    """The worker's full record of an ok or diverged trial; `gpu_name` is NVML's (None on CPU)."""
    return {
        **machine(spec),
        "framework_version": adapter.version(),
        "backend": getattr(adapter, "backend", None),
        "model": model_name,
        "semantics": semantics.describe(spec),
        "init": semantics.resolve(spec).init,
        "numerics": adapter.numerics(),
        "kernels": kernels.describe(spec.framework, getattr(adapter, "backend", None)),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "interpreter": sys.executable,
        "threads": adapter.threads_in_effect(),  # read back; None: the framework has no setting
        "threads_requested": threads,
        "gpu": gpu_name,
    }


def params_check(counted: int, expected: int) -> dict:
    """The ModelSpec's parameter count beside the framework's (the result's `params`), and whether they
    differ: a framework that builds another model than the spec says is flagged, not hidden."""
    return {"params_spec": expected, "params_mismatch": counted != expected}


def for_failure(spec, env_name: str, interpreter: str, info: dict) -> dict:
    """The driver's record of a trial that ended without the worker's: what the driver and the worker's
    ready event (`info`: python, numpy) tell, and the GPU's name from NVML where the trial had one."""
    return {
        **machine(spec),
        "environment": env_name,
        "python": info.get("python"),
        "numpy": info.get("numpy"),
        "interpreter": interpreter,
        "gpu": None if spec.device == "cpu" else gpu_name(spec.device),
    }
