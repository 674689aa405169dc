"""The framework registry: name -> adapter class, the environment that runs it, and its install extra.

Adapters are imported lazily (importlib) so that `import sensitivity` imports no framework.
"""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
from dataclasses import dataclass

from sensitivity import envs


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


FRAMEWORKS = {
    "torch": FrameworkInfo("torch", "sensitivity.frameworks.torch_adapter:TorchAdapter", "modern",
                           "torch", "torch", "torch"),
    "tensorflow": FrameworkInfo("tensorflow", "sensitivity.frameworks.tensorflow_adapter:TensorflowAdapter",
                                "modern", "tensorflow-cpu|tensorflow", "tensorflow", "tensorflow"),
}


class FrameworkUnavailable(Exception):
    """The framework's package is not installed in the running interpreter."""


def worker_variables(spec) -> dict:
    """Environment variables a worker must start with to run `spec` (a backend chosen before import)."""
    info = FRAMEWORKS[spec.framework]
    if not info.backends:
        if spec.backend is not None:
            raise ValueError(f"framework {spec.framework!r} has no backends; --backend is for "
                             f"{', '.join(n for n, i in FRAMEWORKS.items() if i.backends) or 'none'}")
        return {}
    backend = spec.backend or info.backends[0]
    if backend not in info.backends:
        raise ValueError(f"backend {backend!r} of {spec.framework}: allowed {', '.join(info.backends)}")
    return {info.backend_variable: backend}


def importable(name: str) -> bool:
    """Whether the framework can be imported by the running interpreter (without importing it)."""
    return importlib.util.find_spec(FRAMEWORKS[name].module) is not None


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


_VERSION_PROBE = """
import importlib.metadata as m, sys
for dist in sys.argv[1].split('|'):
    try:
        print(m.version(dist)); break
    except m.PackageNotFoundError:
        pass
"""


def installed_versions() -> dict:
    """{framework: version or None} read from each environment's package metadata (no framework import)."""
    versions = {}
    for env in sorted({info.env for info in FRAMEWORKS.values()}):
        names = [n for n, info in FRAMEWORKS.items() if info.env == env]
        for name in names:
            versions[name] = None
            if not envs.is_available(env):
                continue
            probe = subprocess.run([str(envs.interpreter(env)), "-c", _VERSION_PROBE,
                                    FRAMEWORKS[name].distribution], capture_output=True, text=True,
                                   timeout=60)
            versions[name] = probe.stdout.strip() or None
    return versions
