"""Worker process: runs trials in its framework environment and streams JSON lines.

Run as `python -m sensitivity.trial.worker`. Each line on stdin is a request
`{"spec": {...}, "data": "/path/dataset.npz", "model": "lenet5"}`; for each the worker writes
`{"event": "started"}`, one `{"event": "epoch", ...}` per epoch, then `{"event": "result", "result": {...}}`.
A line `{"attack": {...}}` attacks a trained model instead (`sensitivity.trial.attacks`) and gets one
`{"event": "attack_result", "result": {...}}` (or `"error"`).
The protocol has stdout to itself: file descriptor 1 is pointed at stderr, so whatever a framework
prints goes to stderr. A worker stays warm for further trials (the framework import is paid once); each
trial builds a fresh model and reseeds every generator.
"""
from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import sys
import threading
import time
import traceback


def _protocol_stream():
    """Keep the real stdout for the protocol and send fd 1 (and sys.stdout) to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _available_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


STDERR_END = "\x1fsensitivity: end of request output\x1f\n"  # the runner's sign that stderr caught up


def _end_stderr() -> None:
    """Flush every stderr buffer (Python's, and C stdio's that frameworks print through), then write the
    end marker: what the runner reads before it, it has all of; the result follows on stdout."""
    sys.stderr.flush()
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass
    sys.stderr.write(STDERR_END)
    sys.stderr.flush()


def _exit_with_parent() -> None:
    """End this worker when the process that started it dies (it runs in its own session, so it would
    otherwise outlive a killed driver or Ray actor)."""

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


# How each framework says it ran out of memory: numpy, MXNet and Chainer raise MemoryError; torch a
# RuntimeError ("DefaultCPUAllocator: can't allocate memory") or torch.OutOfMemoryError on a GPU; TensorFlow
# ResourceExhaustedError ("OOM when allocating"); JAX an XlaRuntimeError ("RESOURCE_EXHAUSTED").
OOM_TYPES = {"MemoryError", "OutOfMemoryError", "ResourceExhaustedError"}
OOM_TEXT = re.compile(r"out of memory|can't allocate memory|cannot allocate memory|RESOURCE_EXHAUSTED|"
                      r"OOM when allocating|std::bad_alloc", re.IGNORECASE)


def out_of_memory(exc: BaseException) -> bool:
    """Whether a trial's exception is its framework running out of memory."""
    return bool(OOM_TYPES & {t.__name__ for t in type(exc).__mro__}) or bool(OOM_TEXT.search(str(exc)))


def serve(requests, proto) -> None:
    # lazy: after fd 1 points at stderr (`_protocol_stream`): nothing printed at import reaches the protocol
    import numpy

    # lazy: likewise
    from sensitivity.core.spec import TrialResult, TrialSpec
    from sensitivity.datasets.base import Dataset
    from sensitivity.trial import loop

    def emit(event: dict) -> None:
        proto.write(json.dumps(event) + "\n")

    ready = {"event": "ready", "pid": os.getpid(), "python": platform.python_version(), "numpy": numpy.__version__}
    proto.write(json.dumps(ready) + "\n")
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        if "attack" in request:
            proto.write(json.dumps(_attack(request["attack"])) + "\n")
            continue
        spec = TrialSpec.model_validate(request["spec"])
        emit({"event": "started"})
        try:
            data = Dataset.load_npz(request["data"])
            threads = spec.threads or _available_threads()
            result = loop.run(spec, data, request["model"], emit, threads)
        except Exception as exc:  # a trial's failure is a result, not the worker's end
            traceback.print_exc(file=sys.stderr)
            reason = f"{type(exc).__name__}: {exc}"
            if out_of_memory(exc):
                reason = "out of memory: " + reason.rstrip(": ")
            result = TrialResult.failure("failed", reason, spec)
        _end_stderr()
        proto.write(json.dumps({"event": "result", "result": json.loads(result.to_json())}) + "\n")


def _attack(request: dict) -> dict:
    """An attack request's event: its result, or the error that stopped it."""
    from sensitivity.trial import attacks  # lazy: as in `serve`, and only when a model is attacked
    try:
        return {"event": "attack_result", "result": attacks.run_request(request, _available_threads())}
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        return {"event": "attack_result", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        _end_stderr()


def main() -> None:
    _exit_with_parent()
    proto = _protocol_stream()
    serve(sys.stdin, proto)


if __name__ == "__main__":
    main()
