"""The two framework environments and the interpreter that runs each one's trials.

modern (.venv, numpy 2) is also the driver's; legacy (.venv-legacy, numpy 1.23.5) holds MXNet, Chainer
and Theano. `SENSITIVITY_PYTHON_MODERN` / `SENSITIVITY_PYTHON_LEGACY` point elsewhere when set.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_DIRS = {"modern": ".venv", "legacy": ".venv-legacy"}

# Variables every worker of an environment gets: quiet framework logs; Theano without a BLAS to link;
# setuptools' bundled distutils lacks what numpy 1.23's distutils (imported by Theano) needs.
WORKER_ENV = {
    "modern": {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONWARNINGS": "ignore::DeprecationWarning"},
    "legacy": {"THEANO_FLAGS": "blas.ldflags=", "SETUPTOOLS_USE_DISTUTILS": "stdlib",
               "PYTHONWARNINGS": "ignore::DeprecationWarning"},
}


def interpreter(env: str) -> Path:
    """The Python that runs trials of `env`; it may not exist (see `is_available`)."""
    override = os.environ.get(f"SENSITIVITY_PYTHON_{env.upper()}")
    if override:
        return Path(override)
    venv_python = REPO_ROOT / VENV_DIRS[env] / "bin" / "python"
    if env == "modern" and not venv_python.exists():
        return Path(sys.executable)
    return venv_python


def is_available(env: str) -> bool:
    """Whether `env`'s interpreter is a file this process can run (a folder of that name is not)."""
    python = interpreter(env)
    return python.is_file() and os.access(python, os.X_OK)


def _openblas_coretype() -> dict:
    """numpy 1.23's OpenBLAS (0.3.20) takes newer Intel cores for an old Prescott and runs several times slower
    (docs/performance.md); name the core family it should use."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return {}
    if "avx512f" in flags:
        return {"OPENBLAS_CORETYPE": "SkylakeX"}
    if "avx2" in flags:
        return {"OPENBLAS_CORETYPE": "Haswell"}
    return {}


def worker_environ(env: str, variables: dict = None) -> dict:
    environ = dict(os.environ)
    environ.update(WORKER_ENV[env])
    if env == "legacy" and "OPENBLAS_CORETYPE" not in environ:
        environ.update(_openblas_coretype())
    environ.update(variables or {})
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")]))
    return environ
