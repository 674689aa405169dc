"""Sweeps need the driver's packages (Ray, Optuna): not collected in an environment without them, such as
.venv-legacy, which runs only the portable and contract tests."""
import importlib.util

collect_ignore_glob = [] if all(importlib.util.find_spec(m) for m in ("optuna", "ray")) else ["test_*.py"]
