"""The findings of a stored study are cached beside its trial table (`trial_rows.cached_beside`): `sensitivity
findings` after a report reads the report's, only while the study, its own attributes and the code are
unchanged, and never those of a study read with others; the command reads their records without opening the
study (`trial_rows.cached_result`)."""
import json
import os
import subprocess
import sys
import uuid

import optuna
import pandas as pd
import pytest

from sensitivity.analysis import findings as findings_module
from sensitivity.analysis.findings_records import cache_name
from benchmarks import synthetic
from sensitivity.studies import trial_rows


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


def records_of(url, effect=0.02):
    return trial_rows.cached_result(url, "s", cache_name(effect))


def test_their_records_are_read_without_opening_the_study_while_it_is_unchanged(stored, tmp_path):
    found = findings_module.findings(load(stored))
    assert records_of(stored) == findings_module.findings_records(found)
    assert records_of(stored, effect=0.05) is None  # another effect: never computed
    assert trial_rows.cached_result(stored, "other", cache_name(0.02)) is None
    load(stored).set_user_attr("robustness:0", None)  # the study's own attributes are part of the key
    assert records_of(stored) is None
    findings_module.findings(load(stored))
    assert records_of(stored) is not None
    synthetic.write_study(stored, "s", 1)
    assert records_of(stored) is None


def test_nothing_is_read_or_made_where_the_storage_is_not_a_readable_database(stored, tmp_path, monkeypatch):
    from sensitivity.analysis import findings_records, table

    assert findings_records.REGIME == table.REGIME  # the records' module, free of pandas, names the column itself
    findings_module.findings(load(stored))
    missing = tmp_path / "missing.db"
    assert trial_rows.cached_result(f"sqlite:///{missing}", "s", cache_name(0.02)) is None
    assert not missing.exists()  # an SQLite file is opened read-only, never created
    (tmp_path / "garbage.db").write_bytes(b"not a database" * 100)
    assert trial_rows.cached_result(f"sqlite:///{tmp_path / 'garbage.db'}", "s", cache_name(0.02)) is None
    assert trial_rows.cached_result(f"journal:{tmp_path / 'j.journal'}", "s", cache_name(0.02)) is None
    assert trial_rows.cached_result("sqlite://", "s", cache_name(0.02)) is None  # in memory: nothing of it cached
    assert trial_rows.cached_result("postgresql://nobody@127.0.0.1:1/none", "s", cache_name(0.02)) is None
    monkeypatch.setenv("SENSITIVITY_TRIAL_CACHE", "off")
    assert records_of(stored) is None


def test_the_command_prints_the_cached_records_without_pandas_or_optuna_and_as_computed(stored, tmp_path):
    """After a report's findings, `sensitivity findings` reads their records alone, and prints what it prints
    with nothing cached: text, every comparison, JSON."""
    findings_module.findings(load(stored))
    script = ("import sys; from sensitivity.cli import main; code = main(sys.argv[1:]); "
              "print(sorted(m for m in ('pandas', 'optuna') if m in sys.modules), file=sys.stderr); sys.exit(code)")
    for options in ([], ["--all"], ["--json"]):
        argv = [sys.executable, "-c", script, "findings", "s", "--storage", stored, *options]
        cached = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        fresh = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                               env={**os.environ, "SENSITIVITY_TRIAL_CACHE": "off"})
        assert cached.returncode == fresh.returncode == 0, cached.stderr[-2000:] + fresh.stderr[-2000:]
        assert cached.stderr.strip().splitlines()[-1] == "[]"
        assert "'pandas'" in fresh.stderr  # the other way, to show the check can fail
        assert cached.stdout == fresh.stdout
        assert (json.loads(cached.stdout)["claims"] == records_of(stored)["claims"] if options == ["--json"]
                else cached.stdout.startswith("Findings of s: "))


POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")


@pytest.mark.skipif(not POSTGRES and os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") != "1",
                    reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)")
def test_their_records_are_read_from_postgresql_too(tmp_path, monkeypatch):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    name = f"cached-{uuid.uuid4().hex[:8]}"
    synthetic.write_study(POSTGRES, name, 30)
    try:
        found = findings_module.findings(optuna.load_study(study_name=name, storage=POSTGRES))
        assert trial_rows.cached_result(POSTGRES, name, cache_name(0.02)) == findings_module.findings_records(found)
        synthetic.write_study(POSTGRES, name, 1)
        assert trial_rows.cached_result(POSTGRES, name, cache_name(0.02)) is None
    finally:
        optuna.delete_study(study_name=name, storage=POSTGRES)
