"""The findings of a stored study are cached beside its trial table (`trial_rows.cached_beside`): `sensitivity
findings` after a report reads the report's, only while the study, its own attributes and the code are
unchanged, and never those of a study read with others; the command opens the study and finds them by its state,
its table neither read nor unpickled."""
import json
import os
import re
import subprocess
import sys
import uuid

import optuna
import pandas as pd
import pytest

from sensitivity.analysis.claims import findings as findings_module
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


def test_the_command_reads_the_cached_findings_and_prints_what_it_prints_with_nothing_cached(stored, monkeypatch,
                                                                                            capsys):
    """After a report's findings, `sensitivity findings` computes none: it prints the cached ones, as it prints
    them computed afresh: text, every comparison, JSON."""
    from sensitivity.cli import main

    findings_module.findings(load(stored))
    calls = counted(monkeypatch)
    for options in ([], ["--all"], ["--json"]):
        argv = ["findings", "s", "--storage", stored, *options]
        assert main(argv) == 0
        cached = capsys.readouterr().out
        fresh = subprocess.run([sys.executable, "-m", "sensitivity.cli", *argv], capture_output=True, text=True,
                               timeout=300, env={**os.environ, "SENSITIVITY_TRIAL_CACHE": "off"})
        assert fresh.returncode == 0, fresh.stderr[-2000:]
        assert cached == fresh.stdout
        assert (json.loads(cached)["claims"] == findings_module.findings_records(findings_module.findings(
            load(stored)))["claims"] if options == ["--json"] else
                cached.startswith("Liu et al. 2018, natively here") and "\nFindings of s: " in cached)
    assert calls == []  # every one read from the cache
    load(stored).set_user_attr("robustness:0", None)  # the study's own attributes are part of the key
    assert main(["findings", "s", "--storage", stored]) == 0
    assert calls == [1]


def test_the_command_reads_no_table_after_a_report_and_each_studys_once_with_others(stored, monkeypatch, capsys):
    """A study alone: the records a report cached, found by the study's state; its table is neither read nor
    unpickled (0.35 s at 10,000 trials). With others: each study's table once (its key's SQL over every attribute
    row and the unpickling: at 100,000 trials a second read cost 1.3 s of the command's 4.6 s)."""
    from sensitivity.analysis import table as table_module
    from sensitivity.cli import main

    read, from_study = [], table_module._from_study
    monkeypatch.setattr(table_module, "_from_study", lambda study: read.append(study.study_name) or from_study(study))
    assert main(["findings", "s", "--storage", stored]) == 0  # nothing cached yet: computed from the table
    assert read == ["s"] and "\nFindings of s: " in capsys.readouterr().out
    read.clear()
    assert main(["findings", "s", "--storage", stored]) == 0
    assert read == [] and "\nFindings of s: " in capsys.readouterr().out
    assert main(["findings", "s", "--with-study", "s", "--storage", stored]) == 0
    assert read == ["s", "s"]


def test_the_command_after_a_report_imports_no_pandas(stored):
    findings_module.findings(load(stored))
    script = ("import sys; from sensitivity.cli import main; code = main(sys.argv[1:]); "
              "print('pandas imported' if 'pandas' in sys.modules else 'no pandas', file=sys.stderr); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, "findings", "s", "--storage", stored], capture_output=True,
                          text=True, timeout=300, env=os.environ)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Findings of s: " in done.stdout and done.stderr.strip().splitlines()[-1] == "no pandas"


POSTGRES = os.environ.get("SENSITIVITY_TEST_POSTGRES_URL")


@pytest.mark.skipif(not POSTGRES and os.environ.get("SENSITIVITY_REQUIRE_POSTGRES") != "1",
                    reason="no PostgreSQL server (set SENSITIVITY_TEST_POSTGRES_URL)")
def test_they_are_read_back_from_postgresql_too(tmp_path, monkeypatch):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path / "cache"))
    name = f"cached-{uuid.uuid4().hex[:8]}"
    synthetic.write_study(POSTGRES, name, 30)
    try:
        calls = counted(monkeypatch)
        found = findings_module.findings(optuna.load_study(study_name=name, storage=POSTGRES))
        again = findings_module.findings(optuna.load_study(study_name=name, storage=POSTGRES))
        assert len(calls) == 1
        pd.testing.assert_frame_equal(again.claims, found.claims)
        synthetic.write_study(POSTGRES, name, 1)
        findings_module.findings(optuna.load_study(study_name=name, storage=POSTGRES))
        assert len(calls) == 2
    finally:
        optuna.delete_study(study_name=name, storage=POSTGRES)


def test_a_report_reads_back_the_importance_while_the_study_and_the_code_are_unchanged(stored, monkeypatch, tmp_path):
    from sensitivity.analysis.report import importance as claims
    from sensitivity.analysis.report.page import write_report

    calls, compute = [], claims.parameter_importance
    monkeypatch.setattr(claims, "parameter_importance", lambda table: calls.append(1) or compute(table))
    first = write_report(load(stored), tmp_path / "first.html").read_text()
    second = write_report(load(stored), tmp_path / "second.html").read_text()
    assert len(calls) == 1
    section = re.compile(r'<section id="importance">.*?</section>', re.S)
    assert section.search(first).group() == section.search(second).group()
    synthetic.write_study(stored, "s", 1)
    write_report(load(stored), tmp_path / "third.html")
    assert len(calls) == 2
