"""Resource figures of the running trial: peak RSS and CPU use from psutil, GPU figures from NVML.

The peak RSS is this trial's, also in a warm worker that ran bigger trials before: on Linux the kernel's
high-water mark is reset at the start (`/proc/self/clear_refs`) and read at the end (VmHWM); where that
cannot be done, a thread samples the RSS.

NVML is sampled only when the trial runs on a GPU, the one CUDA_VISIBLE_DEVICES maps the device to; without
NVML (or without the NVIDIA library) `gpu` is None and the reason is kept in `gpu_error`.
"""
from __future__ import annotations

import os
import threading
import time

import psutil

SAMPLE_SECONDS = 0.2


class ResourceMonitor:
    """Context manager sampling this process while the trial trains."""

    def __init__(self, device: str = "cpu"):
        self.device = device
        self.process = psutil.Process()
        self.peak_rss_mb = None
        self.cpu_percent = None
        self.gpu = None
        self.gpu_error = None
        self._gpu_samples = []
        self._stop = threading.Event()

    def __enter__(self) -> "ResourceMonitor":
        self._wall = time.perf_counter()
        self._cpu = self.process.cpu_times()
        self._hwm = reset_peak_rss()
        self._rss_peak = self.process.memory_info().rss
        if not self._hwm:
            self._rss_thread = threading.Thread(target=self._sample_rss, daemon=True)
            self._rss_thread.start()
        self._nvml = open_nvml(self.device) if self.device != "cpu" else None
        if isinstance(self._nvml, str):
            self.gpu_error, self._nvml = self._nvml, None
        if self._nvml is not None:
            self._energy0 = self._nvml.energy_mj()
            self._thread = threading.Thread(target=self._sample_gpu, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.perf_counter() - self._wall
        cpu = self.process.cpu_times()
        used = (cpu.user - self._cpu.user) + (cpu.system - self._cpu.system)
        self.cpu_percent = 100.0 * used / wall if wall > 0 else None
        self._stop.set()
        if self._hwm:
            self.peak_rss_mb = read_peak_rss() / 2**20
        else:
            self._rss_thread.join()
            self.peak_rss_mb = max(self._rss_peak, self.process.memory_info().rss) / 2**20
        if self._nvml is not None:
            self._thread.join()
            energy = self._nvml.energy_mj()
            utils = [u for u, _ in self._gpu_samples if u is not None]
            self.gpu_error = self._nvml.error  # a query NVML refused (MIG has no utilisation), or None
            self.gpu = {
                "name": self._nvml.name,
                "utilization_percent": sum(utils) / len(utils) if utils else None,
                "peak_memory_mb": max((m for _, m in self._gpu_samples if m is not None), default=None),
                "energy_j": (energy - self._energy0) / 1000.0 if energy is not None else None,
            }

    def _sample_rss(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS / 4):
            self._rss_peak = max(self._rss_peak, self.process.memory_info().rss)

    def _sample_gpu(self) -> None:
        while not self._stop.wait(SAMPLE_SECONDS):
            try:
                self._gpu_samples.append(self._nvml.sample())
            except Exception as exc:  # never end silently: the reason is the trial's gpu_error
                self._nvml.error = self._nvml.error or f"NVML sampling stopped: {type(exc).__name__}: {exc}"
                return


def reset_peak_rss() -> bool:
    """Reset this process's RSS high-water mark (Linux: "5" to /proc/self/clear_refs); True if done."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return read_peak_rss() is not None
    except OSError:
        return False


def read_peak_rss():
    """VmHWM of /proc/self/status in bytes: the peak RSS since the last reset; None where there is none."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


class NvmlDevice:
    """One GPU seen through NVML (package nvidia-ml-py), by its NVML handle."""

    def __init__(self, pynvml, handle):
        self.nvml = pynvml
        self.handle = handle
        name = pynvml.nvmlDeviceGetName(self.handle)
        self.name = name.decode() if isinstance(name, bytes) else name
        self.error = None  # the first query NVML refused

    def sample(self) -> tuple:
        """(utilisation %, memory used MiB) of the whole GPU; None for a figure NVML refuses (a MIG
        instance has no utilisation), the refusal kept in `error`."""
        return (self._query("utilisation", lambda: self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu),
                self._query("memory", lambda: self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used / 2**20))

    def _query(self, what: str, read):
        try:
            return read()
        except self.nvml.NVMLError as exc:
            self.error = self.error or f"NVML {what} unavailable: {exc}"
            return None

    def energy_mj(self):
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
        except self.nvml.NVMLError:  # older GPUs have no energy counter
            return None


def gpu_name(device: str):
    """NVML's name of the GPU that `device` ("gpu" or "gpu:N") means, or None."""
    nvml = open_nvml(device)
    return None if isinstance(nvml, str) else nvml.name


def nvml_handle(pynvml, device: str):
    """The NVML handle of CUDA's device N ("gpu:N"; "gpu" is 0). NVML numbers GPUs physically and ignores
    CUDA_VISIBLE_DEVICES, so N is mapped through it: an index there, or a GPU (or MIG) UUID or its prefix."""
    index = int(device.split(":")[1]) if ":" in device else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if index >= len(entries):
        raise LookupError(f"{device} is not among CUDA_VISIBLE_DEVICES={visible!r}")
    entry = entries[index]
    if entry.lstrip("-").isdigit():
        if int(entry) < 0:
            raise LookupError(f"{device} is not among CUDA_VISIBLE_DEVICES={visible!r}")
        return pynvml.nvmlDeviceGetHandleByIndex(int(entry))
    try:
        return pynvml.nvmlDeviceGetHandleByUUID(entry)
    except pynvml.NVMLError:  # CUDA also accepts a unique prefix of the UUID
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            if (uuid.decode() if isinstance(uuid, bytes) else uuid).startswith(entry):
                return handle
        raise LookupError(f"no GPU has the UUID {entry!r} of CUDA_VISIBLE_DEVICES") from None


def open_nvml(device: str):
    """An NvmlDevice for "gpu" or "gpu:N", or a string saying why there is none."""
    try:
        # lazy: pynvml
        import pynvml
    except ImportError:
        return "nvidia-ml-py is not installed (extra: gpu)"
    try:
        pynvml.nvmlInit()
        return NvmlDevice(pynvml, nvml_handle(pynvml, device))
    except pynvml.NVMLError as exc:
        return f"NVML unavailable: {exc}"
    except LookupError as exc:
        return str(exc)
