"""The framework registry: name -> adapter class, the environment that runs it, and its install extra.

Adapters are imported lazily (importlib) so that `import sensitivity` imports no framework.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
from dataclasses import dataclass

from sensitivity.core import envs
from sensitivity.frameworks import gpu


@dataclass(frozen=True)
class FrameworkInfo:
    name: str
    adapter: str  # "module:Class"
    env: str  # "modern" or "legacy"
    distribution: str  # the installed package whose version is reported
    extra: str  # pip extra that installs it
    module: str  # the top-level module the adapter imports
    backends: tuple = ()  # allowed values of TrialSpec.backend, the first the default
    backend_variable: str = ""  # environment variable that selects the backend before import
    variables: tuple = ()  # (name, value) pairs its workers always start with


def _entry(name, class_name, env, distribution, module, **backends):
    return FrameworkInfo(name, f"sensitivity.frameworks.{name}_adapter:{class_name}", env, distribution,
                         name, module, **backends)


FRAMEWORKS = {
    "torch": _entry("torch", "TorchAdapter", "modern", "torch", "torch"),
    # its native optimizers are tf.keras's: Keras must run on its tensorflow backend whatever the user exported
    "tensorflow": _entry("tensorflow", "TensorflowAdapter", "modern", "tensorflow-cpu|tensorflow", "tensorflow",
                         variables=(("KERAS_BACKEND", "tensorflow"),)),
    "keras": _entry("keras", "KerasAdapter", "modern", "keras", "keras",
                    backends=("tensorflow", "jax", "torch"), backend_variable="KERAS_BACKEND"),
    "jax": _entry("jax", "JaxAdapter", "modern", "jax", "flax"),
    "pytensor": _entry("pytensor", "PytensorAdapter", "modern", "pytensor", "pytensor"),
    "mxnet": _entry("mxnet", "MxnetAdapter", "legacy", "mxnet", "mxnet"),
    "chainer": _entry("chainer", "ChainerAdapter", "legacy", "chainer", "chainer"),
    "theano": _entry("theano", "TheanoAdapter", "legacy", "Theano", "theano"),
}


# Frameworks that enter through their configuration files only, with the reason.
CONFIGURATION_ONLY = {
    "caffe": "configuration only: no Caffe engine installs here (none in Debian bookworm; the PyPI name is an "
             "empty placeholder); its solver and net files run on every other framework (sensitivity import-caffe)",
}


class FrameworkUnavailable(Exception):
    """The framework's package is not installed in the running interpreter."""


def worker_variables(spec) -> dict:
    """Environment variables a worker must start with to run `spec` (a backend chosen before import)."""
    info = FRAMEWORKS[spec.framework]
    determinism = gpu.determinism_variables() if spec.deterministic else {}
    if not info.backends:
        if spec.backend is not None:
            raise ValueError(f"framework {spec.framework!r} has no backends; --backend is for "
                             f"{', '.join(n for n, i in FRAMEWORKS.items() if i.backends) or 'none'}")
        return {**dict(info.variables), **determinism}
    backend = spec.backend or info.backends[0]
    if backend not in info.backends:
        raise ValueError(f"backend {backend!r} of {spec.framework}: allowed {', '.join(info.backends)}")
    return {info.backend_variable: backend, **determinism}


def importable(name: str) -> bool:
    """Whether the framework and its adapter can be imported here (checked without importing them)."""
    info = FRAMEWORKS[name]
    return all(importlib.util.find_spec(module) is not None
               for module in (info.module, info.adapter.split(":")[0]))


def load_adapter(name: str):
    """A fresh adapter instance; raises FrameworkUnavailable naming the extra to install."""
    info = FRAMEWORKS[name]
    module_name, class_name = info.adapter.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise FrameworkUnavailable(
            f"framework {name!r} is not installed here ({exc}); install the extra: "
            f"pip install 'sensitivity[{info.extra}]' in the {info.env} environment") from exc
    return getattr(module, class_name)()


_PROBE = """
import importlib.metadata as m, importlib.util, json, sys
dists, adapter, name = sys.argv[1].split('|'), sys.argv[2], sys.argv[3]
version = None
for dist in dists:
    try:
        version = m.version(dist); break
    except m.PackageNotFoundError:
        pass
has_adapter = importlib.util.find_spec(adapter) is not None
gpu = None
if has_adapter:
    from sensitivity.frameworks.gpu import build
    gpu = build(name)
print(json.dumps([version, has_adapter, gpu]))
"""


def probe(name: str) -> tuple:
    """(installed version or None, whether it is usable, why not) as seen by the framework's own
    environment, read from package metadata without importing the framework."""
    return _probe(name)[:3]


def gpu_probe(name: str, backend=None) -> tuple:
    """(version, usable, why not, (whether its build can use a GPU, what says so)) in its environment;
    for keras, `backend` names the backend whose build counts (None: any)."""
    return _probe(name, backend)


def _probe(name: str, backend=None) -> tuple:
    info = FRAMEWORKS[name]
    if not envs.is_available(info.env):
        return None, False, f"environment {info.env} missing (scripts/setup.sh {info.env})", None
    gpu_name = backend if name == "keras" and backend else name
    out = subprocess.run([str(envs.interpreter(info.env)), "-c", _PROBE, info.distribution,
                          info.adapter.split(":")[0], gpu_name], capture_output=True, text=True, timeout=60,
                         env=envs.worker_environ(info.env))
    try:
        version, has_adapter, gpu_build = json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return None, False, f"probe failed: {out.stderr.strip()[-200:]}", None
    if version is None:
        return None, False, f"not installed (pip install 'sensitivity[{info.extra}]' in {info.env})", None
    if not has_adapter:
        return version, False, "no adapter in this version of sensitivity", None
    return version, True, "", tuple(gpu_build)


def gpu_refusal(name: str, backend=None):
    """Why a GPU trial of framework `name` cannot run on this machine (its build or the driver), or None."""
    version, usable, why, gpu_build = gpu_probe(name, backend)
    if not usable:
        return why
    if not gpu_build[0]:
        return gpu_build[1]
    return gpu.driver()[1]
