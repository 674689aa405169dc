"""torch's numeric and determinism flags and its GPU set-up, placement report and peak memory: for the torch
adapter and the keras adapter on its torch backend."""
from __future__ import annotations

import torch

from sensitivity.frameworks import gpu


def numerics() -> dict:
    """torch's precision, TF32, cuDNN and determinism flags as it reports them."""
    return {"float32_matmul_precision": torch.get_float32_matmul_precision(),
            "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32, "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled()}


def deterministic_flags() -> None:
    """torch's deterministic kernels (frameworks.gpu.DETERMINISM; CUBLAS_WORKSPACE_CONFIG is a start-up variable)."""
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False


def gpu_setup(framework: str, device: str) -> torch.device:
    """torch's device for GPU `device`: it must be seen (else PlacementError); the caching allocator is capped at
    the trial's share of the GPU, and its peak counter starts now."""
    why = "" if torch.version.cuda else f"torch {torch.__version__} is built without CUDA"
    gpu.require(framework, torch.cuda.device_count() if torch.version.cuda else 0, gpu.index(device), why)
    torch.cuda.set_device(gpu.index(device))
    if gpu.share():
        torch.cuda.set_per_process_memory_fraction(min(gpu.share(), 1.0), gpu.index(device))
    torch.cuda.reset_peak_memory_stats(gpu.index(device))
    return torch.device("cuda", gpu.index(device))


def gpu_placement(framework: str, device: torch.device, where: dict) -> dict:
    """Check that `where`'s tensors live on the GPU; what torch reports of the device, its CUDA and cuDNN."""
    gpu.check_placed(framework, where)
    return {"device_name": torch.cuda.get_device_name(device), "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "placed": {k: str(v) for k, v in where.items()}}


def gpu_peak_mb(device: torch.device):
    """The caching allocator's peak on this GPU since gpu_setup, in MiB (None on the CPU)."""
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
