"""Every private Optuna or Ray name the package uses lies in sensitivity/private_apis.py, whose version check
refuses an Optuna or Ray outside the range the package was tested with.

`private_uses` walks syntax trees and reports, as PATH:LINE: what,
- an import of a private optuna/ray module or name (`from optuna.storages._rdb import models`, `import ray._x`);
- a private attribute (`._name`, read or written, or named to getattr/hasattr/setattr/delattr) on an optuna/ray
  module or an object imported from one; on `self`, `cls` or `super()` in a class derived from an optuna/ray
  class, where the name is one of that class's (Optuna's or Ray's, not ours); on any other object, where
  installed Optuna or Ray defines the name and the package does not (as a module-level name, a function, a
  class, or a method or `self._name` of one of its classes);
- a method of a class derived from an optuna/ray class overriding one of that class's private names;
- an underscore keyword argument that Optuna or Ray defines (`ray.init(_temp_dir=...)`), and a string naming a
  private optuna/ray module (`importlib.import_module("optuna._x")`).
Names given to getattr & co. through a variable count where the variable takes them from string literals in
the same function (`for name in ("_params", ...): getattr(trial, name)`).
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import re
import textwrap
import tomllib
from pathlib import Path

import pytest

from sensitivity import private_apis

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sensitivity"
FENCE = PACKAGE / "private_apis.py"
FOREIGN = ("optuna", "ray")
ACCESSORS = ("getattr", "hasattr", "setattr", "delattr")
NAMEDTUPLE = {"_asdict", "_replace", "_fields", "_field_defaults", "_make"}  # public, though underscored


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _foreign_module(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in FOREIGN


@functools.lru_cache(maxsize=None)
def foreign_private_names() -> frozenset:
    """The private names installed Optuna and Ray define: functions, classes, attributes and parameters set or
    declared, module-level names, and private modules (a regular expression over their sources)."""
    names = set()
    for package in FOREIGN:
        base = Path(importlib.util.find_spec(package).origin).parent
        for path in base.rglob("*.py"):
            text = path.read_text(errors="replace")
            names.update(re.findall(r"(?:def |class |\.)(_[A-Za-z]\w*)\s*(?:\(|:|=(?!=))", text))
            names.update(re.findall(r"^\s*(_[A-Za-z]\w*)\s*(?::|=(?!=))", text, re.M))
            names.update(p for p in path.relative_to(base.parent).with_suffix("").parts if _private(p))
    return frozenset(names)


def _module_name(path: Path) -> str | None:
    try:
        return ".".join(path.resolve().relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return None


def _imports(tree: ast.Module, module: str | None) -> dict:
    """{alias: dotted name it stands for} of every import in the file, at any depth."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level and module:
                source = ".".join(module.split(".")[:-node.level] + ([source] if source else []))
            for alias in node.names:
                out[alias.asname or alias.name] = f"{source}.{alias.name}"
    return out


def _dotted(node) -> list | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _root(node):
    """The name an expression's chain of attributes, calls and subscripts starts at (None: another start)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _resolve(dotted: str):
    """The object at an optuna/ray dotted name, importing the longest module prefix (None if absent)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


class Walk:
    """The syntax trees of `files`, and what each knows: imports, classes, the package's own private names."""

    def __init__(self, files: list, own_files: list):
        self.trees = {Path(f): ast.parse(Path(f).read_text(), str(f)) for f in {*files, *own_files}}
        self.modules = {p: _module_name(p) for p in self.trees}
        self.by_module = {m: p for p, m in self.modules.items() if m}
        self.imports = {p: _imports(t, self.modules[p]) for p, t in self.trees.items()}
        self.files, self.foreign = [Path(f) for f in files], foreign_private_names()
        self.own = self._own_names([Path(f) for f in own_files])

    # Classes derived from optuna/ray classes ---------------------------------------------------------------

    def _class_def(self, path: Path, name: str):
        return next((n for n in ast.walk(self.trees[path]) if isinstance(n, ast.ClassDef) and n.name == name), None)

    @functools.lru_cache(maxsize=None)
    def foreign_bases(self, path: Path, name: str) -> tuple:
        """The optuna/ray classes the class `name` of `path` derives from, directly or through the package's."""
        node = self._class_def(path, name)
        found = []
        for base in node.bases if node else ():
            dotted = _dotted(base)
            if not dotted:
                continue
            head, rest = dotted[0], dotted[1:]
            target = self.imports[path].get(head)
            if target is None:
                if not rest and self._class_def(path, head) is not None and head != name:
                    found += self.foreign_bases(path, head)
                continue
            full = ".".join([target, *rest])
            if _foreign_module(full):
                obj = _resolve(full)
                if inspect.isclass(obj):
                    found.append(obj)
            else:
                module, _, cls = full.rpartition(".")
                if module in self.by_module:
                    found += self.foreign_bases(self.by_module[module], cls)
        return tuple(found)

    @functools.lru_cache(maxsize=None)
    def base_names(self, path: Path, name: str) -> frozenset:
        """The private names of the optuna/ray classes the class derives from: their attributes and methods,
        and what their methods set on `self`."""
        names = set()
        for base in self.foreign_bases(path, name):
            for cls in base.__mro__:
                if not _foreign_module(cls.__module__):
                    continue
                names.update(n for n in vars(cls) if _private(n))
                try:
                    names.update(re.findall(r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=(?!=)", inspect.getsource(cls)))
                except (OSError, TypeError):
                    pass
        return frozenset(names)

    # The package's own private names --------------------------------------------------------------------

    def _own_names(self, files: list) -> frozenset:
        own = set()
        for path in files:
            tree = self.trees[path]
            for node in _module_level(tree):
                own.update(_bound(node))
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                own.add(cls.name)
                inherited = self.base_names(path, cls.name)
                names = set()
                for node in cls.body:
                    names.update(_bound(node))
                for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
                    names.update(n.attr for n in ast.walk(method) if isinstance(n, ast.Attribute)
                                 and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)
                                 and n.value.id == "self")
                own.update(names - inherited)
        return frozenset(n for n in own if _private(n))

    # The uses --------------------------------------------------------------------------------------------

    def uses(self) -> list:
        out = []
        for path in self.files:
            visitor = _Visitor(self, path)
            visitor.visit(self.trees[path])
            out += visitor.found
        return [f"{where}:{line}: {what}" for where, line, what in sorted(set(out), key=lambda f: (str(f[0]), *f[1:]))]


def _module_level(tree: ast.Module):
    """The statements run at module level, inside if/try/with blocks too (not in functions or classes)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)]


def _bound(node) -> set:
    """The names a statement binds: a function, a class, assignment targets, import aliases."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _literal_names(function) -> dict:
    """{variable: strings} for the variables of a function that take strings from literals: loop and
    comprehension targets over a literal or over such a variable, and variables assigned or extended with one
    (`for name in ("_a", "_b")`, `names = [...]; names += [...]; {n: ... for n in names}`)."""
    def strings(expr, known):
        if isinstance(expr, ast.Name):
            return known.get(expr.id, set())
        return {n.value for n in ast.walk(expr) if isinstance(n, ast.Constant) and isinstance(n.value, str)}

    known: dict = {}
    for _ in range(2):  # a variable may iterate over one bound later in the walk
        for node in ast.walk(function):
            pairs = []
            if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                pairs.append((node.target, node.iter))
            elif isinstance(node, ast.Assign):
                pairs += [(target, node.value) for target in node.targets]
            elif isinstance(node, ast.AugAssign):
                pairs.append((node.target, node.value))
            for target, value in pairs:
                if isinstance(target, ast.Name):
                    known.setdefault(target.id, set()).update(strings(value, known))
    return known


class _Visitor(ast.NodeVisitor):
    def __init__(self, walk: Walk, path: Path):
        self.walk, self.path, self.found = walk, path, []
        self.imports = walk.imports[path]
        self.inherited = frozenset()  # the private names of the enclosing class's optuna/ray bases
        self.literals = {}  # in the enclosing function: variable -> the strings it takes from literals
        try:
            self.where = path.resolve().relative_to(ROOT)
        except ValueError:
            self.where = path

    def report(self, node, what: str) -> None:
        self.found.append((self.where, node.lineno, what))

    def visit_Import(self, node):
        for alias in node.names:
            if _foreign_module(alias.name) and any(_private(p) for p in alias.name.split(".")):
                self.report(node, f"import {alias.name}")

    def visit_ImportFrom(self, node):
        module = node.module or ""
        if _foreign_module(module) and node.level == 0:
            private = [a.name for a in node.names if _private(a.name)]
            if any(_private(p) for p in module.split(".")) or private:
                self.report(node, f"from {module} import {', '.join(a.name for a in node.names)}")

    def visit_ClassDef(self, node):
        outer, self.inherited = self.inherited, self.walk.base_names(self.path, node.name)
        for method in node.body:
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name in self.inherited:
                self.report(method, f"def {method.name} overrides an optuna/ray private method")
        self.generic_visit(node)
        self.inherited = outer

    def attribute(self, node, owner, name: str) -> None:
        if not _private(name) or name in NAMEDTUPLE:
            return
        self_like = (isinstance(owner, ast.Name) and owner.id in ("self", "cls")) or \
            (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super")
        if self_like and self.inherited:
            if name in self.inherited:
                self.report(node, f"{ast.unparse(owner)}.{name}, an optuna/ray class's private name")
            return
        root = _root(owner)
        if root in self.imports:
            if _foreign_module(self.imports[root]):
                self.report(node, f"{ast.unparse(owner)}.{name} on an optuna/ray name")
            return  # another module's, or the package's own
        if name in self.walk.foreign and name not in self.walk.own:
            self.report(node, f"{ast.unparse(owner)}.{name}, a private name of Optuna or Ray")

    def visit_Attribute(self, node):
        self.attribute(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        outer, self.literals = self.literals, _literal_names(node)
        self.generic_visit(node)
        self.literals = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in ACCESSORS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                self.attribute(node, node.args[0], name.value)
            elif isinstance(name, ast.Name):
                for value in sorted(self.literals.get(name.id, ())):
                    self.attribute(node, node.args[0], value)
        for keyword in node.keywords:
            if keyword.arg and _private(keyword.arg) and keyword.arg in self.walk.foreign:
                self.report(keyword, f"keyword argument {keyword.arg}=")
        self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            text = node.value
            if re.fullmatch(r"(optuna|ray)(\.\w+)*\._\w+(\.\w+)*", text):
                self.report(node, f"the module name {text!r}")


def package_files() -> list:
    """The package's sources, and the benchmarks' (they read studies as the package does)."""
    return sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "benchmarks").rglob("*.py"))


def private_uses(files: list, own_files=None) -> list:
    """PATH:LINE: what, for each private Optuna or Ray name used in `files` (see the module's docstring); the
    package's own private names are those `own_files` (default: the package but the fence) define."""
    own = [p for p in package_files() if p != FENCE] if own_files is None else own_files
    return Walk(files, own).uses()


# The tests ------------------------------------------------------------------------------------------------

needs_optuna_and_ray = pytest.mark.skipif(
    any(importlib.util.find_spec(p) is None for p in FOREIGN), reason="reads the installed Optuna and Ray")


@needs_optuna_and_ray
def test_private_optuna_and_ray_names_are_used_in_the_fence_only():
    offenders = private_uses([p for p in package_files() if p != FENCE])
    assert not offenders, "private Optuna/Ray names outside sensitivity/private_apis.py (add a function there):\n" \
        + "\n".join(offenders)


@needs_optuna_and_ray
def test_the_fence_is_where_they_are():
    found = private_uses([FENCE])
    for expected in ("_CachedStorage", "._storage", "._study_id", "_temp_dir", "_sample"):
        assert any(expected in line for line in found), (expected, found)


@needs_optuna_and_ray
def test_the_walk_reports_each_kind_of_use_with_its_file_and_line(tmp_path):
    snippet = tmp_path / "offender.py"
    snippet.write_text(textwrap.dedent('''\
        import optuna
        import optuna._hypervolume
        from optuna.storages._rdb import models
        from optuna.study._multi_objective import _is_pareto_front
        from optuna.samplers import TPESampler


        def rows(study, trial, ray):
            storage = study._storage
            ray.init(_temp_dir="/tmp/x")
            getattr(storage, "_backend", None)
            optuna.logging._get_library_root_logger()
            return trial._cached_frozen_trial, study.own_public


        class Sampler(TPESampler):
            def _sample(self, study, trial, search_space):
                return self._rng, self._mine

            def helper(self):
                self._mine = 1
                return super()._sample_relative(None, None, None)
        '''))
    found = private_uses([snippet])
    assert found == [
        f"{snippet}:2: import optuna._hypervolume",
        f"{snippet}:3: from optuna.storages._rdb import models",
        f"{snippet}:4: from optuna.study._multi_objective import _is_pareto_front",
        f"{snippet}:9: study._storage, a private name of Optuna or Ray",
        f"{snippet}:10: keyword argument _temp_dir=",
        f"{snippet}:11: storage._backend, a private name of Optuna or Ray",
        f"{snippet}:12: optuna.logging._get_library_root_logger on an optuna/ray name",
        f"{snippet}:13: trial._cached_frozen_trial, a private name of Optuna or Ray",
        f"{snippet}:17: def _sample overrides an optuna/ray private method",
        f"{snippet}:18: self._rng, an optuna/ray class's private name",
        f"{snippet}:22: super()._sample_relative, an optuna/ray class's private name",
    ]


@needs_optuna_and_ray
def test_the_package_own_private_names_and_other_libraries_are_not_reported(tmp_path):
    snippet = tmp_path / "fine.py"
    snippet.write_text(textwrap.dedent('''\
        import os

        from sensitivity.studies import storage


        def stop(record):
            storage._file_of("x")
            record._asdict()
            os._exit(1)
        '''))
    assert private_uses([snippet]) == []


# The version check ----------------------------------------------------------------------------------------

def test_the_installed_versions_pass():
    import importlib.metadata
    for package in FOREIGN:
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
        private_apis.check_version(package, version)


@pytest.mark.parametrize("package, version", [("optuna", "4.5.0"), ("optuna", "5.1.0"), ("optuna", "5.0.0rc1"),
                                              ("ray", "2.59.0"), ("ray", "2.61.0"), ("ray", "3.0.0")])
def test_a_version_outside_the_range_is_refused_in_one_line(package, version):
    with pytest.raises(ImportError) as raised:
        private_apis.check_version(package, version)
    message = str(raised.value)
    assert "\n" not in message and package in message and version in message
    assert private_apis.SUPPORTED[package] in message


@pytest.mark.parametrize("package, version", [("optuna", "5.0.0"), ("optuna", "5.0.3"), ("optuna", "5.0.0.post1"),
                                              ("ray", "2.60.0"), ("ray", "2.60.1")])
def test_a_version_inside_the_range_passes(package, version):
    private_apis.check_version(package, version)


def test_the_fence_supports_what_the_sweep_extra_declares():
    sweep = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["sweep"]
    declared = {re.match(r"[\w-]+", r).group(0): re.sub(r"^[\w-]+(\[[^]]*\])?", "", r) for r in sweep}
    assert {p: declared[p] for p in FOREIGN} == private_apis.SUPPORTED
    pins = (ROOT / "constraints" / "modern.txt").read_text()
    for package in FOREIGN:
        pinned = re.search(rf"^{package}==(\S+)", pins, re.M).group(1)
        private_apis.check_version(package, pinned)
