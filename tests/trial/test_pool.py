"""One worker pool (`sensitivity.trial.pool`): every Worker of the package is built by one factory in
sensitivity/trial/, and every pool key by one function (a walk of the sources, as tests/test_private_apis.py
walks them); and the pool on real worker processes."""
from __future__ import annotations

import ast
from pathlib import Path

from sensitivity.trial.pool import WorkerPool, pool_key

PACKAGE = Path(__file__).resolve().parents[2] / "sensitivity"
TRIAL = PACKAGE / "trial"


def workers_built(source: str) -> list:
    """Lines of `source` that build a Worker: a call of `Worker(...)`, `runner.Worker(...)` or of `cls(...)`
    inside a class named Worker."""
    found = []

    class Visitor(ast.NodeVisitor):
        inside: list = []

        def visit_ClassDef(self, node):
            self.inside.append(node.name)
            self.generic_visit(node)
            self.inside.pop()

        def visit_Call(self, node):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name == "Worker" or (name == "cls" and "Worker" in self.inside):
                found.append(node.lineno)
            self.generic_visit(node)

    Visitor().visit(ast.parse(source))
    return found


def keys_made(source: str) -> list:
    """Lines of `source` that make a pool key by hand: `tuple(sorted(X.items()))`."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tuple"
            and node.args and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Name)
            and node.args[0].func.id == "sorted" and node.args[0].args
            and isinstance(node.args[0].args[0], ast.Call) and isinstance(node.args[0].args[0].func, ast.Attribute)
            and node.args[0].args[0].func.attr == "items"]


def sources():
    return {path: path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_walk_finds_a_worker_built_and_a_key_made():
    assert workers_built("from sensitivity.trial.runner import Worker\nw = Worker('modern', {})\n") == [2]
    assert workers_built("import x\nw = x.runner.Worker(env)\n") == [2]
    assert workers_built("class Worker:\n    @classmethod\n    def make(cls):\n        return cls('modern')\n") == [4]
    assert keys_made("key = (env, tuple(sorted(variables.items())))\n") == [1]
    assert workers_built("w = new_worker('modern')\n") == [] and keys_made("k = pool_key(env, v)\n") == []


def test_one_factory_builds_every_worker_and_one_function_makes_every_pool_key():
    built = {path.relative_to(PACKAGE.parent): lines for path, text in sources().items()
             if (lines := workers_built(text))}
    assert list(built) == [Path("sensitivity/trial/runner.py")] and len(built[Path("sensitivity/trial/runner.py")]) \
        == 1, f"a Worker is built outside runner.new_worker: {built}"
    made = {path.relative_to(PACKAGE.parent): lines for path, text in sources().items() if (lines := keys_made(text))}
    assert list(made) == [Path("sensitivity/trial/pool.py")], f"a pool key is made outside pool.pool_key: {made}"


def test_a_pool_lends_a_warm_worker_again_and_never_a_dead_one():
    pool = WorkerPool()
    env, variables = "modern", {"OMP_NUM_THREADS": "1"}
    try:
        worker, new = pool.take(env, variables)
        assert new and not worker.alive()  # made by the factory, started by its first trial
        worker.start()
        pool.give_back(env, variables, worker)
        with pool.lent(env, dict(reversed(list(variables.items())))) as again:  # the same set-up, in any order
            assert again is worker and again.alive()
        other, new = pool.take(env, {"OMP_NUM_THREADS": "2"})  # another set-up: another worker
        assert new and other is not worker
        worker.kill()
        assert pool.take(env, variables)[0] is not worker and pool.idle() == 0  # a dead worker is not lent
        live, _ = pool.take(env, {"OMP_NUM_THREADS": "3"})
        live.start()
        pool.give_back(env, {"OMP_NUM_THREADS": "3"}, live)
        assert pool.end_idle(where=lambda key: key != pool_key(env, {"OMP_NUM_THREADS": "3"})) == 0
        assert pool.end_idle(older_than_s=60) == 0 and pool.idle() == 1
        assert pool.end_idle(where=lambda key: dict(key[1])["OMP_NUM_THREADS"] == "3") == 1
        assert not live.alive() and pool.idle() == 0 and pool.started == 4
    finally:
        pool.close()
