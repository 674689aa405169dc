"""TensorFlow's thread pools, numeric and determinism flags and its GPU set-up, placement report and peak memory:
for the tensorflow adapter and the keras adapter on its tensorflow backend."""
from __future__ import annotations

import tensorflow as tf

from sensitivity.frameworks import gpu


def set_threads(threads: int) -> None:
    """TensorFlow's intra- and inter-op pools; settable once per process: a warm worker keeps the first setting."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass


_OP_DETERMINISM = {"enabled": False}  # what deterministic_flags set in this process


def numerics() -> dict:
    """TensorFlow's TF32 and op-determinism settings. TensorFlow reports TF32 itself; it has no public getter
    for op determinism (2.21 has none), so that is what this process set through deterministic_flags, the only
    caller of enable_op_determinism in a trial."""
    experimental = tf.config.experimental
    getter = getattr(experimental, "is_op_determinism_enabled", None)
    return {"tensor_float_32_execution": experimental.tensor_float_32_execution_enabled(),
            "op_determinism": getter() if getter else _OP_DETERMINISM["enabled"]}


def deterministic_flags() -> None:
    """TensorFlow's deterministic kernels (frameworks.gpu.DETERMINISM)."""
    tf.config.experimental.enable_op_determinism()
    _OP_DETERMINISM["enabled"] = True


def gpu_setup(framework: str, device: str) -> str:
    """TensorFlow's name ("/GPU:N") of GPU `device`: no soft placement (an op without a GPU kernel fails instead
    of running on the CPU unseen), the GPU must be seen (else PlacementError), and its peak-memory counter
    starts now. Memory grows on demand (TF_FORCE_GPU_ALLOW_GROWTH, set by the worker's start-up variables)."""
    tf.config.set_soft_device_placement(False)
    seen = len(tf.config.list_logical_devices("GPU"))
    gpu.require(framework, seen, gpu.index(device), "" if tf.test.is_built_with_cuda() else
                f"tensorflow {tf.__version__} is built without CUDA")
    tf.config.experimental.reset_memory_stats(f"GPU:{gpu.index(device)}")
    return f"/GPU:{gpu.index(device)}"


def gpu_placement(framework: str, device: str, where: dict) -> dict:
    """Check that `where`'s tensors live on the GPU; what TensorFlow reports of it and of its build."""
    gpu.check_placed(framework, where)
    physical = tf.config.list_physical_devices("GPU")[int(device.rpartition(":")[2])]  # device: "/GPU:N"
    details, build = tf.config.experimental.get_device_details(physical), tf.sysconfig.get_build_info()
    return {"device_name": details.get("device_name"), "compute_capability": details.get("compute_capability"),
            "cuda": build.get("cuda_version"), "cudnn": build.get("cudnn_version"),
            "tf32": tf.config.experimental.tensor_float_32_execution_enabled(),
            "placed": {k: str(v) for k, v in where.items()}}


def gpu_peak_mb(device: str):
    """TensorFlow's allocator peak on this GPU since gpu_setup, in MiB (None on the CPU)."""
    name = device.lstrip("/")
    return tf.config.experimental.get_memory_info(name)["peak"] / 2**20 if name.startswith("GPU") else None
