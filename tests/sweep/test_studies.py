"""Inspecting studies after a real sweep: list, show, export, and optuna-dashboard's API."""
import json
import socket
import subprocess
import sys
import time
import urllib.request

import pandas as pd
import pytest

from sensitivity import frameworks

pytestmark = pytest.mark.skipif(not frameworks.importable("torch"), reason="needs torch")


def cli(cwd, *args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sensitivity.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("studies")
    (cwd / "s.yaml").write_text("""
study: look
dataset: digits
frameworks: [torch]
parameters: {lr: {type: float, low: 0.01, high: 0.3, log: true}}
fixed: {epochs: 2}
objectives: [{metric: val_accuracy, direction: maximize}, {metric: train_time_s, direction: minimize}]
""")
    proc = cli(cwd, "sweep", "s.yaml", "--trials", 3, "--parallel", 2, "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cwd


def test_studies_list_and_show(swept):
    listing = cli(swept, "studies")
    assert listing.returncode == 0
    row = next(line for line in listing.stdout.splitlines() if line.startswith("look "))
    assert row.split()[1:3] == ["3", "3"] and "maximize,minimize" in row
    shown = cli(swept, "studies", "show", "look")
    assert shown.returncode == 0 and "Pareto set: #" in shown.stdout and "param_lr" in shown.stdout
    missing = cli(swept, "studies", "show", "nope")
    assert missing.returncode == 2 and "studies: look" in missing.stderr


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_has_parameters_values_and_results(swept, fmt):
    out = swept / f"look.{fmt}"
    proc = cli(swept, "export", "look", "--format", fmt, "--out", out)
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_csv(out) if fmt == "csv" else pd.read_parquet(out)
    assert len(frame) == 3 and (frame["state"] == "COMPLETE").all()
    assert {"param_lr", "param_framework", "value_0", "value_1", "accuracy", "train_time_s", "seed"} <= set(frame)
    assert all(len(json.loads(c)) == 2 for c in frame["curve"])


def test_dashboard_serves_the_study_on_localhost(swept):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "sensitivity.cli", "dashboard", "--port", str(port)], cwd=swept,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, studies = time.monotonic() + 60, None
        while time.monotonic() < deadline and studies is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=5) as r:
                    studies = json.load(r)["study_summaries"]
            except OSError:
                time.sleep(0.5)
        study = next(s for s in studies if s["study_name"] == "look")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{study['study_id']}", timeout=30) as r:
            detail = json.load(r)
        assert len(detail["trials"]) == 3
        listening = [c.laddr.ip for c in __import__("psutil").net_connections("tcp")
                     if c.laddr and c.laddr.port == port and c.status == "LISTEN"]
        assert listening == ["127.0.0.1"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_trial_from_study_reruns_its_configuration(swept):
    import optuna
    study = optuna.load_study(study_name="look", storage=f"sqlite:///{swept}/results/optuna.db")
    original = study.trials[1]
    proc = cli(swept, "trial", "--from-study", "look", "--trial", 1, "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rerun = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rerun["spec"]["lr"] == original.params["lr"] and rerun["spec"]["epochs"] == 2
    assert rerun["spec"]["val_fraction"] == 0.2 and rerun["spec"]["seed"] == original.user_attrs["seed"]
    assert rerun["val_accuracy"] == pytest.approx(original.user_attrs["val_accuracy"])  # same seed, same result
    assert cli(swept, "trial", "--from-study", "look", "--trial", 7).returncode == 2


def test_plot_and_report_commands(swept):
    html = cli(swept, "plot", "look", "--kind", "frontier", "--out", swept / "frontier.html")
    assert html.returncode == 0, html.stderr[-2000:]
    assert "plotly" in (swept / "frontier.html").read_text().lower()
    bad = cli(swept, "plot", "look", "--kind", "frontier", "--out", swept / "frontier.gif")
    assert bad.returncode == 2 and ".svg" in bad.stderr
    report = cli(swept, "report", "look")
    assert report.returncode == 0, report.stderr[-2000:]
    page = (swept / "results" / "look-report.html").read_text()
    assert "Runtime-accuracy" in page and "not computed for this study" in page
