"""JAX's numeric and determinism flags and its GPU set-up, placement report and peak memory: for the jax
adapter, the keras adapter on its jax backend and the pytensor adapter (which reaches a GPU through JAX)."""
from __future__ import annotations

import jax

from sensitivity.core.paths import cache_root
from sensitivity.frameworks import gpu

COMPILATION_CACHE_BYTES = 2 * 1024 ** 3  # XLA's executables kept on disk, least recently used evicted past it


def use_compilation_cache() -> None:
    """Keep XLA's compiled programs on disk (JAX's persistent compilation cache, under the cache folder), every
    compile however short: each trial builds a fresh model whose programs are new to the in-memory cache, and
    would otherwise compile again what a trial of the same shapes compiled before (seconds a trial on CPU). The
    programs are XLA's own, so results are the same; only compile time changes."""
    jax.config.update("jax_compilation_cache_dir", str(cache_root() / "jax-compilation"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_compilation_cache_max_size", COMPILATION_CACHE_BYTES)


def numerics() -> dict:
    """JAX's matmul precision and x64 flags as it reports them."""
    return {"jax_default_matmul_precision": jax.config.jax_default_matmul_precision,
            "jax_enable_x64": bool(jax.config.jax_enable_x64)}


def deterministic_flags() -> None:
    """Nothing to set once JAX runs: XLA reads --xla_gpu_deterministic_ops from XLA_FLAGS at start-up
    (frameworks.gpu.determinism_variables), and XLA:CPU is deterministic."""


def gpu_setup(framework: str, device: str):
    """JAX's GPU `device`, or PlacementError when JAX sees none (a CPU-only jaxlib, no CUDA plugin, or no
    visible GPU). Its allocator takes memory on demand up to the trial's share (the worker's start-up
    variables XLA_PYTHON_CLIENT_PREALLOCATE and XLA_PYTHON_CLIENT_MEM_FRACTION)."""
    try:
        devices, why = jax.devices("gpu"), ""
    except RuntimeError as exc:  # "Unknown backend gpu", "no CUDA devices"
        devices, why = [], str(exc).splitlines()[0][:200]
    gpu.require(framework, len(devices), gpu.index(device), why)
    return devices[gpu.index(device)]


def gpu_placement(framework: str, device, where: dict) -> dict:
    """Check that `where`'s arrays live on the GPU; what JAX reports of the device and its CUDA."""
    gpu.check_placed(framework, {k: f"{getattr(v, 'platform', '')}:{v}" for k, v in where.items()})
    report = {"device_name": device.device_kind, "placed": {k: str(v) for k, v in where.items()}}
    try:
        # lazy: jax
        from jax._src.lib import cuda_versions  # present with a CUDA plugin
        report.update(cuda=cuda_versions.cuda_runtime_get_version(), cudnn=cuda_versions.cudnn_get_version())
    except (ImportError, AttributeError):
        report.update(cuda=None, cudnn=None)
    return report


def gpu_peak_mb(device):
    """XLA's allocator peak on this device, in MiB: since the worker started (JAX cannot reset it)."""
    stats = device.memory_stats() if device.platform != "cpu" else None
    return stats["peak_bytes_in_use"] / 2**20 if stats and "peak_bytes_in_use" in stats else None
