"""Resource figures: psutil on this machine; NVML's error path here, and its figures with a stand-in for
the GPU this machine lacks (the code path is the real one a GPU machine takes)."""
import sys
import time
import types

import numpy as np
import pytest

from sensitivity.trial import monitor


def test_cpu_trial_has_rss_and_cpu_and_no_gpu():
    with monitor.ResourceMonitor("cpu") as m:
        block = np.ones((2000, 2000))
        deadline = time.process_time() + 0.3
        while time.process_time() < deadline:
            block = block @ block[:, :1].repeat(2000, axis=1) / 2000
    assert m.peak_rss_mb > 30 and m.cpu_percent > 20 and m.gpu is None


@pytest.mark.parametrize("kernel_reset", [True, False])
def test_peak_rss_is_each_monitors_own(monkeypatch, kernel_reset):
    if not kernel_reset:  # where /proc/self/clear_refs cannot be written, a thread samples the RSS
        monkeypatch.setattr(monitor, "reset_peak_rss", lambda: False)
    with monitor.ResourceMonitor("cpu") as big:
        block = np.ones(300 * 2**20 // 8)
        time.sleep(0.15)
        del block
    with monitor.ResourceMonitor("cpu") as small:
        pass
    assert big.peak_rss_mb > 300 and small.peak_rss_mb < big.peak_rss_mb - 250


def test_no_nvidia_library_gives_a_reason_not_figures():
    try:
        import pynvml
        pynvml.nvmlInit()
        pytest.skip("this machine has an NVIDIA GPU")
    except Exception:
        pass
    reason = monitor.open_nvml("gpu")
    assert isinstance(reason, str) and "NVML" in reason
    with monitor.ResourceMonitor("gpu:0") as m:
        pass
    assert m.gpu is None and m.gpu_error == reason and m.peak_rss_mb > 0


class FakeNvml:
    """Stands in for nvidia-ml-py's module on a machine without a GPU."""

    class NVMLError(Exception):
        pass

    UUIDS = ["GPU-0000aaaa-0", "GPU-1111bbbb-1", "GPU-2222cccc-2", "GPU-3333dddd-3"]

    def __init__(self):
        self.energy = 1_000_000

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.UUIDS)

    def nvmlDeviceGetHandleByIndex(self, index):
        if not 0 <= index < len(self.UUIDS):
            raise self.NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid not in self.UUIDS:
            raise self.NVMLError("Not Found")
        return self.UUIDS.index(uuid)

    def nvmlDeviceGetUUID(self, handle):
        return self.UUIDS[handle]

    def nvmlDeviceGetName(self, handle):
        return b"Fake H200" if handle == 1 else f"Fake GPU {handle}".encode()

    def nvmlDeviceGetUtilizationRates(self, handle):
        return types.SimpleNamespace(gpu=80)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return types.SimpleNamespace(used=3 * 2**30)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        self.energy += 5000  # millijoules per reading
        return self.energy


def test_gpu_figures_from_nvml(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setattr(monitor, "open_nvml", lambda device: monitor.NvmlDevice(fake, 1))
    monkeypatch.setattr(monitor, "SAMPLE_SECONDS", 0.01)
    with monitor.ResourceMonitor("gpu:1") as m:
        time.sleep(0.2)
    assert m.gpu["name"] == "Fake H200" and m.gpu["utilization_percent"] == 80
    assert m.gpu["peak_memory_mb"] == 3 * 1024 and m.gpu["energy_j"] == pytest.approx(5.0)


@pytest.mark.parametrize("visible, device, physical", [
    (None, "gpu", 0), (None, "gpu:2", 2), ("3", "gpu", 3), ("3,1", "gpu:1", 1), ("2,3", "gpu:0", 2),
    ("GPU-3333dddd-3", "gpu:0", 3), ("GPU-0000aaaa-0,GPU-2222", "gpu:1", 2),  # a full UUID, a unique prefix
])
def test_nvml_follows_cuda_visible_devices(monkeypatch, visible, device, physical):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    nvml = monitor.open_nvml(device)
    assert nvml.handle == physical and nvml.name == f"Fake GPU {physical}".replace("Fake GPU 1", "Fake H200")
    assert monitor.gpu_name(device) == nvml.name


@pytest.mark.parametrize("visible", ["0", "", "-1", "GPU-9999"])
def test_gpu_outside_cuda_visible_devices_is_a_reason(monkeypatch, visible):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    reason = monitor.open_nvml("gpu:1" if visible == "0" else "gpu")
    assert isinstance(reason, str) and ("CUDA_VISIBLE_DEVICES" in reason)
    assert monitor.gpu_name("gpu") is None or visible == "0"
