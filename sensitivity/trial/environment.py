"""What a result records about where it ran: versions, host, CPU, GPU, git revision, seed."""
from __future__ import annotations

import functools
import platform
import socket
import subprocess
import sys

import numpy as np

from sensitivity import envs


@functools.lru_cache(maxsize=None)
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=None)
def git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(envs.REPO_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def describe(spec, adapter, threads: int, model_name: str) -> dict:
    return {
        "framework": spec.framework,
        "framework_version": adapter.version(),
        "model": model_name,
        "init": spec.init,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "interpreter": sys.executable,
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "threads": threads,
        "device": spec.device,
        "gpu": None if spec.device == "cpu" else spec.device,
        "git_revision": git_revision(),
        "seed": spec.seed,
    }
