"""GPU facts of the frameworks: which builds can use a GPU (read without importing them), the NVIDIA driver,
the share of a GPU a trial may allocate, and the placement check every GPU trial passes before training.

A GPU trial never trains on the CPU under a GPU label: an adapter's `setup` raises PlacementError when its
framework sees no GPU (TensorFlow would otherwise fall back silently), and the loop checks after building
that the model and the training data live on the GPU.
"""
from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

SHARE_VARIABLE = "SENSITIVITY_GPU_SHARE"  # the fraction of its GPU a trial may allocate (Ray's gpus-per-trial)
JAX_PLUGINS = ("jax-cuda13-plugin", "jax-cuda12-plugin")
NO_GPU_ROUTE = {
    "theano": "Theano has no GPU backend on current CUDA: its gpuarray backend needs libgpuarray/pygpu, which "
              "has no wheel and was last released in 2018 (CUDA 10 era); the old CUDA backend is removed",
    "chainer": "chainer 7.8.1 supports CuPy 7.x only, whose wheels stop at CUDA 11.0 and Python 3.8 (none for "
               "this Python 3.11) and have no kernels for current GPUs (sm_89, sm_90); a newer CuPy is unsupported",
}


class PlacementError(RuntimeError):
    """A GPU trial whose framework does not see, or did not use, the GPU: the trial fails before training."""


def no_gpu(framework: str, why: str) -> PlacementError:
    return PlacementError(f"framework {framework} sees no GPU ({why})")


def require(framework: str, seen: int, index: int, why: str) -> None:
    """Raise PlacementError unless the framework sees GPU `index` among the `seen` it reports."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    where = f"CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else "CUDA_VISIBLE_DEVICES unset"
    if seen == 0:
        raise no_gpu(framework, f"{why}; {where}" if why else where)
    if index >= seen:
        raise PlacementError(f"framework {framework} sees {seen} GPU(s), not gpu:{index} ({where})")


def check_placed(framework: str, where: dict) -> None:
    """`where` maps what was placed (model, data) to the device the framework reports; each must be a GPU."""
    off = {k: v for k, v in where.items() if not re.search(r"gpu|cuda", str(v), re.IGNORECASE)}
    if off:
        raise no_gpu(framework, "placed on " + ", ".join(f"{k}: {v}" for k, v in off.items()))


def share() -> float | None:
    """The fraction of its GPU this trial may allocate (None: the whole GPU)."""
    value = os.environ.get(SHARE_VARIABLE)
    return float(value) if value else None


def allocator_variables(gpu_share: float) -> dict:
    """Start-up variables of a worker that may use `gpu_share` of its GPU: JAX (and PyTensor on JAX)
    allocate on demand up to the share, TensorFlow grows its allocation on demand, torch caps its caching
    allocator at the share (`set_per_process_memory_fraction`, read from SHARE_VARIABLE)."""
    return {SHARE_VARIABLE: f"{gpu_share:g}", "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
            "XLA_PYTHON_CLIENT_MEM_FRACTION": f"{gpu_share:.3f}", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


DETERMINISM_VARIABLE = "SENSITIVITY_DETERMINISTIC"
# What --deterministic sets in each framework, and what non-determinism it leaves.
DETERMINISM = {
    "torch": ("torch.use_deterministic_algorithms(True), cudnn.deterministic, no cudnn.benchmark, "
              "CUBLAS_WORKSPACE_CONFIG=:4096:8", "none known for these models; an op without a deterministic "
              "kernel raises instead of running"),
    "tensorflow": ("tf.config.experimental.enable_op_determinism()", "none known; an op without a deterministic "
                   "kernel raises"),
    "jax": ("XLA_FLAGS=--xla_gpu_deterministic_ops=true", "none known (XLA:CPU is deterministic)"),
    "pytensor": ("XLA_FLAGS=--xla_gpu_deterministic_ops=true (through JAX on a GPU)", "none known"),
    "keras": ("its backend's flags (tensorflow, jax or torch, as above)", "as its backend"),
    "mxnet": ("MXNET_ENFORCE_DETERMINISM=1, MXNET_CUDNN_AUTOTUNE_DEFAULT=0", "ops without a deterministic "
              "kernel still run non-deterministically (MXNet raises for none)"),
    "chainer": ("chainer.config.cudnn_deterministic = True", "atomic-add kernels outside cuDNN stay "
                "non-deterministic"),
    "theano": ("none needed: CPU only", "none on a CPU"),
}


READS_BUILD = ("torch", "tensorflow", "keras", "jax", "pytensor", "mxnet")  # the frameworks `build` has a branch for


@dataclass(frozen=True)
class Support:
    """A framework's GPU support, part of its declaration (frameworks.FrameworkInfo.gpu)."""

    no_gpu: str  # "" where `build` reads whether its installed build can use a GPU; else why it has no GPU route
    determinism: tuple  # (what --deterministic sets in it, what non-determinism that leaves)


def support(name: str):
    """The GPU support this module knows of framework `name`, or None where a piece is missing: a branch of
    `build` (READS_BUILD) or a reason in NO_GPU_ROUTE, and its DETERMINISM."""
    if name not in DETERMINISM or (name not in READS_BUILD and name not in NO_GPU_ROUTE):
        return None
    return Support(NO_GPU_ROUTE.get(name, ""), DETERMINISM[name])


def declare(name: str, declared: Support) -> None:
    """Record the GPU support of a framework declared outside the package (frameworks.register)."""
    if not declared.no_gpu and name not in READS_BUILD:
        raise ValueError(f"framework {name!r}: a GPU build needs a branch of frameworks/gpu.py build(); "
                         f"else declare why it has no GPU (Support.no_gpu)")
    DETERMINISM[name] = declared.determinism
    if declared.no_gpu:
        NO_GPU_ROUTE[name] = declared.no_gpu


def determinism_variables() -> dict:
    """Start-up variables of a worker whose trials ask for deterministic kernels (read before import)."""
    flags = " ".join(filter(None, [os.environ.get("XLA_FLAGS"), "--xla_gpu_deterministic_ops=true"]))
    return {DETERMINISM_VARIABLE: "1", "XLA_FLAGS": flags, "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
            "MXNET_ENFORCE_DETERMINISM": "1", "MXNET_CUDNN_AUTOTUNE_DEFAULT": "0"}


def deterministic() -> bool:
    """Whether this worker's trials ask for deterministic kernels (set at its start)."""
    return os.environ.get(DETERMINISM_VARIABLE) == "1"


def index(device: str) -> int:
    """CUDA's device number of "gpu" or "gpu:N"."""
    return int(device[4:] or 0)


def _dist_version(name: str):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _module_file(module: str, relative: str):
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / relative
    return path.read_text() if path.exists() else None


def build(name: str, backend: str | None = None) -> tuple:
    """(can use a GPU, what says so) for the installed build of framework `name`, read from package
    metadata and build files in this interpreter, without importing the framework."""
    if name in NO_GPU_ROUTE:
        if name == "chainer" and any(d.metadata["Name"].startswith("cupy") for d in metadata.distributions()):
            return True, "CuPy installed (unsupported by chainer 7.8.1 beyond CuPy 7)"
        return False, NO_GPU_ROUTE[name]
    if name == "keras":
        if backend:
            return build(backend)
        builds = {b: build(b) for b in ("tensorflow", "jax", "torch")}
        capable = [b for b, (ok, _) in builds.items() if ok]
        return (True, "backends with a GPU: " + ", ".join(capable)) if capable else \
            (False, "no backend has a GPU build (see tensorflow, jax and torch)")
    if name == "torch":
        text = _module_file("torch", "version.py") or ""
        cuda = re.search(r"^cuda\b.*=\s*'([^']+)'", text, re.MULTILINE)
        return (True, f"CUDA {cuda[1]}") if cuda else \
            (False, f"this build is CPU-only (torch {_dist_version('torch')})")
    if name == "tensorflow":
        if _dist_version("tensorflow-cpu"):
            return False, "this build is CPU-only (tensorflow-cpu)"
        text = _module_file("tensorflow", "python/platform/build_info.py") or ""
        return ("'is_cuda_build', True" in text, "CUDA build" if "'is_cuda_build', True" in text
                else "this build is CPU-only (tensorflow built without CUDA)")
    if name in ("jax", "pytensor"):
        plugin = next((p for p in JAX_PLUGINS if _dist_version(p)), None)
        via = "" if name == "jax" else "through JAX: "
        return (True, f"{via}{plugin} {_dist_version(plugin)}") if plugin else \
            (False, f"{via}jaxlib is CPU-only (no {' or '.join(JAX_PLUGINS)})")
    if name == "mxnet":
        gpu = next((d.metadata["Name"] for d in metadata.distributions()
                    if d.metadata["Name"].lower().startswith("mxnet-cu")), None)
        return (True, gpu) if gpu else (False, "this build is CPU-only (PyPI's mxnet): MXNet is retired and its "
                                               "GPU builds stop at mxnet-cu117 (CUDA 11.7, no sm_90 kernels)")
    return False, "no GPU route known"


def driver() -> tuple:
    """(NVIDIA driver version, None) or (None, why there is none)."""
    try:
        # lazy: pynvml
        import pynvml
        try:
            pynvml.nvmlInit()
            version = pynvml.nvmlSystemGetDriverVersion()
            return (version.decode() if isinstance(version, bytes) else version), None
        except pynvml.NVMLError as exc:
            return None, f"no NVIDIA driver (NVML: {exc})"
    except ImportError:
        pass
    if shutil.which("nvidia-smi") is None:
        return None, "no NVIDIA driver (no nvidia-smi, nvidia-ml-py not installed)"
    out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True, timeout=30)
    version = out.stdout.strip().splitlines()[:1]
    return (version[0], None) if out.returncode == 0 and version else (None, "no NVIDIA driver (nvidia-smi failed)")


def column(usable: bool, gpu_build, driver_state: tuple) -> str:
    """The GPU column of `sensitivity frameworks`: yes, or no with the reason."""
    if not usable or gpu_build is None:
        return "-"
    capable, why = gpu_build
    if not capable:
        return f"no: {why}"
    version, missing = driver_state
    return f"no: {missing}" if missing else f"yes ({why}; driver {version})"


def visible_count():
    """The GPUs a process started here may use: CUDA_VISIBLE_DEVICES's entries where it is set, else NVML's
    count (0 without an NVIDIA driver); None where that cannot be known (nvidia-ml-py not installed)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([e for e in visible.split(",") if e.strip() and not e.strip().startswith("-")])
    try:
        # lazy: pynvml
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError:
        return 0


def check_here(device: str) -> None:
    """ValueError unless `device` (cpu, gpu or gpu:N) exists on this machine."""
    if device == "cpu":
        return
    count = visible_count()
    if count is not None and index(device) >= count:
        have = "no GPU" if count == 0 else f"{count} GPU(s): gpu:0 to gpu:{count - 1}"
        raise ValueError(f"device {device}: this machine has {have}")
