"""The framework registry: each framework's one declaration (FrameworkInfo), checked when this module is imported.

Adapters are imported lazily (importlib) so that `import sensitivity` imports no framework. Adding a framework:
docs/architecture.md ("Adding a framework"), kept true by tests/frameworks/test_declaration.py.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
from dataclasses import dataclass, field
from typing import Optional

from sensitivity.core import envs, semantics
from sensitivity.frameworks import gpu


class DeclarationError(ValueError):
    """A framework's declaration lacks a piece; one line naming the framework, the piece and where it goes."""


@dataclass(frozen=True)
class FrameworkInfo:
    """One framework's declaration: every piece the package needs of it (`check_declaration` says which is
    missing). `native` and `gpu` of a framework inside the package are written in core/semantics.py NATIVE and
    frameworks/gpu.py (docs/semantics.md and `sensitivity frameworks` are rendered from there) and `_entry` picks
    them up by its name; one declared outside it (`register`) carries them itself."""

    name: str
    adapter: str  # "module:Class", a class implementing frameworks.base.Adapter
    env: str  # "modern" or "legacy" (core/envs.py)
    distribution: str  # the installed package whose version is reported ("a|b": the first installed)
    extra: str  # pip extra that installs it (pyproject.toml [project.optional-dependencies])
    module: str  # the top-level module the adapter imports
    backends: tuple = ()  # allowed values of TrialSpec.backend, the first the default
    backend_variable: str = ""  # environment variable that selects the backend before import
    variables: tuple = ()  # (name, value) pairs its workers always start with
    # its native semantics (core/semantics.py NATIVE[name]) and GPU support (frameworks/gpu.py: a branch of build()
    # or NO_GPU_ROUTE, and DETERMINISM); neither compared nor hashed (a Native holds dicts)
    native: Optional[semantics.Native] = field(default=None, compare=False, repr=False)
    gpu: Optional[gpu.Support] = field(default=None, compare=False, repr=False)


def check_declaration(info: FrameworkInfo) -> None:
    """Raise DeclarationError, in one line, for the first piece `info` lacks or gets wrong."""
    def fail(what: str):
        raise DeclarationError(f"framework {info.name!r}: {what}")
    if not info.name.isidentifier():
        fail("its name must be an identifier (it names the extra, the adapter module and the search spaces' entries)")
    module, _, class_name = info.adapter.partition(":")
    if not (module and class_name.isidentifier()):
        fail(f"adapter {info.adapter!r} is not 'module:Class' (a class implementing frameworks.base.Adapter)")
    if info.env not in envs.VENV_DIRS:
        fail(f"env {info.env!r} is not one of {', '.join(envs.VENV_DIRS)} (core/envs.py)")
    for piece, where in (("distribution", "the installed package whose version is reported"),
                         ("extra", "its pip extra in pyproject.toml [project.optional-dependencies]"),
                         ("module", "the top-level module its adapter imports")):
        if not getattr(info, piece):
            fail(f"no {piece} ({where})")
    if info.backends and not info.backend_variable:
        fail("backends without a backend_variable (the environment variable that selects one before import)")
    if info.native is None:
        fail("no native semantics (a Native in core/semantics.py NATIVE, or native= in its declaration)")
    if semantics.NATIVE.get(info.name, info.native) != info.native:
        fail("its native semantics differ from core/semantics.py NATIVE's entry")
    if info.gpu is None:
        fail("no GPU support (frameworks/gpu.py: a branch of build() or a reason in NO_GPU_ROUTE, and "
             "DETERMINISM; or gpu= in its declaration)")


def register(info: FrameworkInfo) -> None:
    """Add a framework declared outside the package (a plugin; the tests' toy framework): check its declaration,
    then enter it and its native semantics and GPU support where the package reads them."""
    check_declaration(info)
    if info.name in FRAMEWORKS or info.name in semantics.NATIVE:
        raise DeclarationError(f"framework {info.name!r}: already declared")
    gpu.declare(info.name, info.gpu)
    semantics.NATIVE[info.name] = info.native
    FRAMEWORKS[info.name] = info


def _entry(name, class_name, env, distribution, module, **backends):
    return FrameworkInfo(name, f"sensitivity.frameworks.{name}_adapter:{class_name}", env, distribution,
                         name, module, **backends, native=semantics.NATIVE.get(name), gpu=gpu.support(name))


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
for _name, _info in FRAMEWORKS.items():
    if _name != _info.name:
        raise DeclarationError(f"framework {_name!r}: its declaration is named {_info.name!r}")
    check_declaration(_info)


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
