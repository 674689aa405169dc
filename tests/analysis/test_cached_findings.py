"""The findings of a stored study are cached beside its trial table (`trial_rows.cached_beside`): `sensitivity
findings` after a report reads the report's, only while the study, its own attributes and the code are
unchanged, and never those of a study read with others."""
import optuna
import pandas as pd
import pytest

from sensitivity.analysis import findings as findings_module
from sensitivity.sweep import synthetic, trial_rows


@pytest.fixture
def stored(tmp_path, monkeypatch):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path}/s.db"
    synthetic.write_study(url, "s", 40)
    return url


def counted(monkeypatch) -> list:
    calls, compute = [], findings_module._findings
    monkeypatch.setattr(findings_module, "_findings", lambda *args: calls.append(1) or compute(*args))
    return calls


def load(url):
    return optuna.load_study(study_name="s", storage=url)


def test_findings_are_read_back_while_the_study_and_the_code_are_unchanged(stored, monkeypatch):
    calls = counted(monkeypatch)
    first = findings_module.findings(load(stored))
    again = findings_module.findings(load(stored))  # a new study object and table, as in a new process
    assert len(calls) == 1
    pd.testing.assert_frame_equal(again.claims, first.claims)
    pd.testing.assert_frame_equal(again.comparisons, first.comparisons)
    findings_module.findings(load(stored), effect=0.05)  # another effect: its own
    assert len(calls) == 2
    monkeypatch.setattr(trial_rows, "_CODE", ["other code"])
    findings_module.findings(load(stored))
    assert len(calls) == 3


def test_findings_are_computed_afresh_after_a_change_or_with_other_studies(stored, monkeypatch):
    calls = counted(monkeypatch)
    findings_module.findings(load(stored))
    load(stored).set_user_attr("ablation", {"steps": []})  # a study attribute, read afresh by the table
    findings_module.findings(load(stored))
    synthetic.write_study(stored, "s", 2)  # two more trials
    findings_module.findings(load(stored))
    findings_module.findings(load(stored), [load(stored)])
    findings_module.findings(load(stored), [load(stored)])
    assert len(calls) == 5
