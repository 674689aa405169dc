"""A test worker: the real one (`sensitivity.trial.worker`) with a fault injected, for the runner's fault
handling, which nothing else provokes on demand.

The runner starts this file in place of the real worker where `SENSITIVITY_TEST_WORKER=fault_worker`
(`environ` gives both variables): under either environment's interpreter, inside Ray actors too, where no
fixture reaches. It serves with the real worker's `serve`, through a protocol stream that injects
`SENSITIVITY_WORKER_FAULT` just after writing an epoch event: `segfault` crashes the worker, `exit` exits it
(code 3), `raise` raises inside the trial, `oom` exhausts the memory a lowered RLIMIT_AS leaves (a real
MemoryError), `torch_oom` asks torch for more memory than any address space holds (torch's own RuntimeError),
`alloc` touches and frees 400 MB in the worker's first trial only (a warm worker's later trials must not
report that peak). `hang_start` hangs before the worker is ready.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import sys
import time
from pathlib import Path

FAULTS = ("segfault", "exit", "raise", "oom", "torch_oom", "alloc", "hang_start")


def environ(fault: str) -> dict:
    """The variables that make the runner start this worker, injecting `fault`."""
    assert fault in FAULTS, fault
    return {"SENSITIVITY_TEST_WORKER": Path(__file__).stem, "SENSITIVITY_WORKER_FAULT": fault}


def inject(monkeypatch, fault: str) -> None:
    """Set `environ(fault)` for one test (pytest's monkeypatch undoes it)."""
    for name, value in environ(fault).items():
        monkeypatch.setenv(name, value)


class FaultyStream:
    """The worker's protocol stream, injecting `fault` after each epoch event it writes."""

    def __init__(self, stream, fault: str):
        self.stream, self.fault, self.allocated = stream, fault, []

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        if json.loads(text).get("event") == "epoch":
            self._inject()
        return written

    def flush(self) -> None:
        self.stream.flush()

    def _inject(self) -> None:
        if self.fault == "alloc" and not self.allocated:
            self.allocated.append(len(bytearray(400 * 2**20)))  # zero-filled, so every page is touched
        elif self.fault == "segfault":
            ctypes.string_at(0)
        elif self.fault == "exit":
            os._exit(3)
        elif self.fault == "raise":
            raise RuntimeError("fault injected by SENSITIVITY_WORKER_FAULT=raise")
        elif self.fault == "oom":
            _exhaust_memory()
        elif self.fault == "torch_oom":
            import torch
            torch.empty(2**50, dtype=torch.uint8)  # 1 PiB: beyond any address space, so it fails everywhere


def _exhaust_memory() -> None:
    """Allocate 64 MB blocks until the address space, limited to 256 MB above its current size, runs out."""
    with open("/proc/self/status") as f:
        size = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + 256 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
    blocks = []
    while True:
        blocks.append(bytearray(64 * 2**20))


def main() -> None:
    # run by path, so tests/ is first on sys.path: drop it, so the worker imports what it would
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        sys.path.pop(0)
    from sensitivity.trial import worker

    fault = os.environ.get("SENSITIVITY_WORKER_FAULT", "")
    if fault not in FAULTS:
        sys.exit(f"fault_worker: SENSITIVITY_WORKER_FAULT={fault!r}: allowed {', '.join(FAULTS)}")
    worker._exit_with_parent()
    proto = worker._protocol_stream()
    if fault == "hang_start":
        time.sleep(3600)
    worker.serve(sys.stdin, FaultyStream(proto, fault))


if __name__ == "__main__":
    main()
