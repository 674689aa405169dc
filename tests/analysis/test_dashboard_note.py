"""`sensitivity report STUDY --to-dashboard` (issue 43): the Findings and the importance table become the study's
note in optuna-dashboard and the report's figures its artifacts, in the store beside the storage that `sensitivity
dashboard` hands to optuna-dashboard. Read back through the real optuna-dashboard's HTTP API, served by `sensitivity
dashboard`; a second run replaces, never duplicates; nothing is written to a study without the flag."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import optuna
import pytest
from benchmarks import synthetic

from sensitivity import private_apis
from sensitivity.cli import main
from sensitivity.studies import notes

pytest.importorskip("optuna_dashboard")


@pytest.fixture(scope="module")
def chromium():
    from sensitivity.analysis.report import browser

    try:
        return browser.chromium()
    except browser.BrowserMissing as reason:
        if os.environ.get("SENSITIVITY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} and SENSITIVITY_REQUIRE_BROWSER=1")
        pytest.skip(f"{reason}: the figures are PNG images drawn by kaleido's Chromium")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def _served(storage: str, cwd):
    """`sensitivity dashboard` (optuna-dashboard) on a free port, once it answers; its process."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", "dashboard", "--storage", storage, "--port",
                             str(port)], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _get(f"http://127.0.0.1:{port}/api/meta")
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            if proc.poll() is not None:
                raise AssertionError(f"the dashboard exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)
    raise AssertionError("the dashboard did not answer within 60 s")


def _stop(proc) -> None:
    os.killpg(proc.pid, signal.SIGTERM)  # the process group this test started: the dashboard alone
    proc.wait(timeout=30)


def _attrs(storage: str, name: str) -> dict:
    return private_apis.study_system_attrs(optuna.load_study(study_name=name, storage=storage))


def test_report_to_dashboard_writes_the_note_and_figures_that_optuna_dashboard_shows(chromium, tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'main.db'}"
    synthetic.write_study(storage, "sweep", 60)
    synthetic.write_study(storage, "other", 12)
    before = _attrs(storage, "other")
    assert main(["report", "other", "--storage", storage, "--out", str(tmp_path / "other.html")]) == 0
    assert _attrs(storage, "other") == before and not (tmp_path / "artifacts").exists()  # no flag: nothing written

    argv = ["report", "sweep", "--storage", storage, "--out", str(tmp_path / "r.html"), "--to-dashboard"]
    assert main(argv) == 0
    store = tmp_path / "artifacts"
    first = sorted(p.name for p in store.iterdir())
    assert "dashboard: the note of study sweep and" in capsys.readouterr().out
    proc, base = _served(storage, tmp_path)
    try:
        study_id = private_apis.study_id(optuna.load_study(study_name="sweep", storage=storage))
        shown = json.loads(_get(f"{base}/api/studies/{study_id}?after=0"))
        body = shown["note"]["body"]
        assert body.startswith("# sensitivity: sweep") and "## Findings" in body and "## Importance" in body
        assert "| parameter | PED-ANOVA | fANOVA |" in body and "Regime native" in body
        linked = re.findall(r"!\[(sensitivity-[a-z-]+\.png)\]\((/artifacts/\d+/[0-9a-f-]+)\)", body)
        artifacts = {a["filename"]: a for a in shown["artifacts"]}
        assert {"sensitivity-parallel.png", "sensitivity-dependence.png", "sensitivity-frontier.png"} <= set(artifacts)
        assert sorted(name for name, _ in linked) == sorted(artifacts) and len(artifacts) == len(first)
        for name, url in linked:  # each image of the note, as the dashboard serves it, is the figure in the store
            data = _get(base + url)
            assert data[:4] == b"\x89PNG" and data == (store / artifacts[name]["artifact_id"]).read_bytes()
        version = shown["note"]["version"]

        assert main(argv) == 0  # again: the same artifacts, new bytes, the note replaced
        again = json.loads(_get(f"{base}/api/studies/{study_id}?after=0"))
        assert sorted(a["artifact_id"] for a in again["artifacts"]) == sorted(a["artifact_id"] for a in
                                                                              shown["artifacts"])
        assert sorted(p.name for p in store.iterdir()) == first and again["note"]["version"] == version + 1
        assert again["note"]["body"].count("\n## Findings\n") == 1

        study = optuna.load_study(study_name="sweep", storage=storage)  # a figure no longer drawn is removed
        gone = artifacts["sensitivity-parallel.png"]["artifact_id"]
        kept = [(n, (store / a["artifact_id"]).read_bytes(), "image/png") for n, a in artifacts.items()
                if n != "sensitivity-parallel.png"]
        notes.publish(study, kept, lambda urls: "\n".join(urls.values()), store)
        after = json.loads(_get(f"{base}/api/studies/{study_id}?after=0"))
        assert gone not in {a["artifact_id"] for a in after["artifacts"]} and not (store / gone).exists()
        assert len(after["artifacts"]) == len(artifacts) - 1
        assert len(private_apis.study_artifacts(study)) == len(artifacts) - 1
    finally:
        _stop(proc)


def test_artifact_dir_without_to_dashboard_is_refused_in_one_line(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'main.db'}"
    synthetic.write_study(storage, "sweep", 12)
    capsys.readouterr()
    code = main(["report", "sweep", "--storage", storage, "--artifact-dir", str(tmp_path / "a")])
    assert code == 2 and capsys.readouterr().err.strip() == ("sensitivity report: --artifact-dir is for "
                                                             "--to-dashboard")
    assert not (tmp_path / "a").exists()
