"""Fixtures of the analysis tests. The legacy environment (numpy 1, no Optuna, pandas or plotly) skips
this folder at collection: the analysis runs in the driver's environment only."""
import importlib.util

import pytest

ANALYSIS_STACK = ("optuna", "pandas", "plotly", "scipy")

if any(importlib.util.find_spec(module) is None for module in ANALYSIS_STACK):
    collect_ignore_glob = ["test_*.py"]
else:
    from analysis_data import make_study
    from planted import REPORTED

    @pytest.fixture(scope="module")
    def seeded_study():
        """30 configurations x 2 seeds across three frameworks, 3 failed, 2 pruned, 3 framework defaults."""
        return make_study(n_configs=30, seeds=2, failed=3, pruned=2, defaults=(0, 1, 2))

    def pytest_terminal_summary(terminalreporter):
        """What the planted worlds measured (coverage of the intervals, selection bias), in the test output."""
        if REPORTED:
            terminalreporter.write_sep("-", "planted worlds: what the findings' statistics measured")
            for line in REPORTED:
                terminalreporter.write_line(line)
