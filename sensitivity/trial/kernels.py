"""Which CPU kernels a trial's numerics came from: the instruction set each framework's CPU library dispatched to
on this machine, its BLAS and that BLAS's core type, and the variables that steer them.

The same configuration and seed can train differently on two CPUs (oneDNN and the BLAS libraries choose their
kernels by instruction set), so every result's `env` carries `kernels` (`describe`):
- `isa`: one line, the summary a table column and the findings compare ("oneDNN AVX2; OpenBLAS Haswell");
- per library: oneDNN's version and ISA (TensorFlow, MXNet), ATen's CPU capability and MKL's build (torch),
  numpy's BLAS with its core type (threadpoolctl, every framework), and for JAX the CPU's vector extensions;
- `variables`: OPENBLAS_CORETYPE, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS and the like, as the worker got them.

oneDNN and MKL report their dispatch only through their verbose output, which would also print a line per
primitive run, so a short probe (`_probe`: one small convolution and matrix product in a fresh interpreter of
the same environment, with the libraries' verbose switches on) reads it once per machine, framework version and
variables, cached under the cache folder; a failed probe is recorded as such, never fails a trial.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata

import numpy  # noqa: F401  (loaded first: threadpoolctl then sees the BLAS that numpy loads)
import threadpoolctl

from sensitivity.core import paths

STEERING = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "MKLDNN_MAX_CPU_ISA",
            "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "MKL_DEBUG_CPU_TYPE", "ATEN_CPU_CAPABILITY", "XLA_FLAGS",
            "TF_ENABLE_ONEDNN_OPTS", "MXNET_MKLDNN_ENABLED")
VERBOSE = {"ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1", "MKLDNN_VERBOSE": "1", "MKL_VERBOSE": "1"}
PROBE_TIMEOUT_S = 120.0
# a kernel run by each framework's own library, in a fresh interpreter (its verbose lines go to stdout)
PROBES = {
    "tensorflow": "import tensorflow as tf\n"
                  "tf.nn.conv2d(tf.ones((2, 8, 8, 4)), tf.ones((3, 3, 4, 8)), 1, 'VALID').numpy()\n"
                  "tf.matmul(tf.ones((64, 64)), tf.ones((64, 64))).numpy()",
    "mxnet": "import mxnet as mx\n"
             "mx.nd.Convolution(mx.nd.ones((2, 4, 8, 8)), mx.nd.ones((8, 4, 3, 3)), no_bias=True, kernel=(3, 3),"
             " num_filter=8).wait_to_read()\n"
             "mx.nd.dot(mx.nd.ones((64, 64)), mx.nd.ones((64, 64))).wait_to_read()",
    "torch": "import torch\n"
             "torch.nn.functional.conv2d(torch.ones(2, 4, 8, 8), torch.ones(8, 4, 3, 3))\n"
             "torch.ones(64, 64) @ torch.ones(64, 64)\n"
             "print('aten_cpu_capability:' + torch.backends.cpu.get_cpu_capability())",
}
USES = {"keras": {"tensorflow": "tensorflow", "torch": "torch", "jax": None}}  # keras' backend's library


def describe(framework: str, backend=None) -> dict:
    """The kernels record of a trial of `framework` (and, for Keras, its backend) run in this process's
    environment; see the module."""
    library = USES[framework].get(backend) if framework in USES else framework
    record = {"variables": {k: os.environ[k] for k in STEERING if k in os.environ}, "blas": numpy_blas()}
    if library in PROBES:
        record.update(probe(library))
    if library in ("jax", None):  # XLA compiles for the CPU it runs on
        record["cpu_flags"] = list(cpu_vector_flags())
    record["isa"] = summary(record)
    return record


def summary(record: dict) -> str:
    """One line of what ran: "oneDNN AVX2; MKL; ATen AVX2; OpenBLAS Haswell"."""
    parts = []
    if record.get("onednn_isa"):
        parts.append(f"oneDNN {record['onednn_isa'].removeprefix('Intel ')}")
    if record.get("mkl"):
        parts.append("MKL")
    if record.get("aten_cpu_capability"):
        parts.append(f"ATen {record['aten_cpu_capability']}")
    if record.get("cpu_flags"):
        parts.append("CPU " + "/".join(record["cpu_flags"]))
    # each library once (scipy and numpy may each bring an OpenBLAS), in a fixed order: processes list them in
    # the order they loaded them
    parts += sorted({f"{blas['internal_api']} {blas.get('architecture') or ''}".strip()
                     for blas in record.get("blas") or ()})
    if record.get("probe_error"):
        parts.append("probe failed")
    return "; ".join(dict.fromkeys(parts)) or "unknown"


def numpy_blas() -> list:
    """numpy's BLAS libraries as threadpoolctl finds them: their API, version and core type."""
    return [{"internal_api": i.get("internal_api"), "version": i.get("version"), "architecture": i.get("architecture")}
            for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]


@functools.lru_cache(maxsize=None)
def cpu_vector_flags() -> tuple:
    """The CPU's widest vector extensions (/proc/cpuinfo), which XLA's CPU backend compiles for."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return ()
    return tuple(f for f in ("avx512f", "avx512_bf16", "amx_tile", "avx2", "fma", "sse4_2") if f in flags)


def cpu_model() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it (else what the platform module knows)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def probe(library: str) -> dict:
    """What `library` reports of its kernels on this machine (see the module), from the cache when it holds it."""

    variables = {k: os.environ[k] for k in STEERING if k in os.environ}
    key = json.dumps([library, sys.executable, _version(library), cpu_model(), variables], sort_keys=True)
    path = paths.cache_root() / "kernels" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    found = _probe(library)
    if "probe_error" not in found:
        try:
            with paths.atomic_write(path) as file:
                file.write(json.dumps(found).encode())
        except OSError:
            pass  # an unwritable cache costs the probe again, nothing else
    return found


def _version(library: str):
    for name in {"tensorflow": ("tensorflow", "tensorflow-cpu"), "mxnet": ("mxnet",), "torch": ("torch",)}[library]:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _probe(library: str) -> dict:
    env = {**os.environ, **VERBOSE, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        out = subprocess.run([sys.executable, "-c", PROBES[library]], capture_output=True, text=True, env=env,
                             timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return {"probe_error": f"{type(exc).__name__}: {exc}"[:200]}
    found = parse(out.stdout + out.stderr)
    if out.returncode != 0:
        found["probe_error"] = f"the probe exited with code {out.returncode}"
    return found


def parse(text: str) -> dict:
    """The verbose lines' facts: oneDNN's version, ISA and the convolution's implementation; MKL's build line;
    ATen's capability (printed by the torch probe)."""
    found = {}
    for line in text.splitlines():
        if re.match(r"(onednn|dnnl|mkldnn)_verbose", line):
            fields = line.split(",")
            if "info" in fields and any(f.startswith("oneDNN v") for f in fields):
                found["onednn_version"] = next(f for f in fields if f.startswith("oneDNN v")).split()[1]
            if ",isa:" in line:  # the rest of the line: the ISA's own text has commas
                found["onednn_isa"] = line.split(",isa:", 1)[1].strip()
            if "exec" in fields and "convolution" in fields and "onednn_convolution" not in found:
                found["onednn_convolution"] = fields[fields.index("convolution") + 1]
        elif line.startswith("MKL_VERBOSE") and "mkl" not in found and "Product build" in line:
            found["mkl"] = line.removeprefix("MKL_VERBOSE").strip()
        elif line.startswith("aten_cpu_capability:"):
            found["aten_cpu_capability"] = line.split(":", 1)[1].strip()
    return found
