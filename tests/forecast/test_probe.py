"""The throughput probe on a real framework, its cache per host and framework version, and the dry runs of
`sweep` and `reproduce`, which launch nothing and write no study."""
import contextlib
import json
import subprocess
import sys
import time

import pytest

from sensitivity.core import envs
from sensitivity.cli import main
from sensitivity.forecast import probe, throughput
from sensitivity.forecast.estimate import Run, forecast
from sensitivity.forecast.probe import Cell

CELL = Cell("torch", "mlp", (1, 8, 8), 10, 32)


def test_the_probe_imports_neither_ray_nor_optuna():
    code = ("import json, sys; from sensitivity.forecast.probe import Cell, measure; "
            "line = measure(Cell('torch', 'mlp', (1, 8, 8), 10, 32), steps=5); "
            "print(json.dumps([line['step_s'] > 0, 'ray' in sys.modules, 'optuna' in sys.modules]))")
    done = subprocess.run([str(envs.interpreter("modern")), "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [True, False, False]


def test_measured_once_per_host_and_version_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(probe, "LOADED_CORES", float("inf"))  # however busy the machine: caching is tested here
    calls = []
    real = throughput.run_probe
    monkeypatch.setattr(throughput, "run_probe", lambda *a, **k: calls.append(a) or real(*a, **k))
    first = throughput.measured([CELL], steps=20)[CELL]
    assert first["steps"] == 20 and first["compile_s"] >= 0 and first["samples_per_s"] > 0
    again = throughput.measured([CELL], steps=20)[CELL]
    assert again == first and len(calls) == 1
    entries = json.loads(throughput.cache_path().read_text())
    (key,) = entries
    assert key.startswith(entries[key]["framework_version"].split("+")[0]) and '"framework": "torch"' in key
    throughput.measured([CELL], steps=40)  # a longer probe than the cached one measures again
    assert len(calls) == 2


@contextlib.contextmanager
def busy_loops(count: int):
    """`count` CPU-bound processes (Python busy loops) beside the block."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        time.sleep(0.5)  # running
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def test_a_probe_beside_a_busy_process_is_said_to_be_loaded_and_not_cached(tmp_path, monkeypatch):
    """Steps are timed in blocks, the fastest taken; the cores others kept busy are measured beside the probe, and
    a loaded probe's figures serve the forecast it was made for, which says so, but are not cached."""
    monkeypatch.setenv("SENSITIVITY_CACHE_DIR", str(tmp_path))
    with busy_loops(2):
        figures = throughput.measured([CELL], steps=40)[CELL]
    assert figures["load_beside"] > probe.LOADED_CORES and probe.loaded(figures), figures
    assert figures["blocks"] == probe.BLOCKS and figures["step_s"] <= figures["step_s_mean"]
    assert throughput.cached([CELL]) == {} and not throughput.cache_path().exists()
    found = forecast([Run(CELL, "digits", steps=100, epochs=2, eval_samples=500)], {CELL: figures}, slots=1)
    (note,) = [n for n in found.notes if n.startswith("probe:")]
    assert "other processes kept" in note and "not cached as this host's speed" in note


def test_sweep_dry_run_prints_the_forecast_and_writes_no_study(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    storage = tmp_path / "s.db"
    code = main(["sweep", str(_repo() / "search_spaces/digits.yaml"), "--trials", "6",
                 "--frameworks", "torch", "--dry-run", "--probe-steps", "5", "--storage", f"sqlite:///{storage}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "6 trials" in out and "torch" in out and "digits" in out and "sampled: forecast from the space" in out
    assert "train" in out and "core-hours" in out
    assert not storage.exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize("args, says", [
    (["--scale", "0"], "--scale 0: allowed 0 < F <= 1"),
    (["--scale", "1.5"], "--scale 1.5: allowed 0 < F <= 1"),
    ([], "sensitivity datasets download mnist --data-dir DIR"),
    (["--frameworks", "caffe"], "'caffe' is not in liu2018"),
    (["--scale", "0.01", "--dry-run", "--cpus-per-trial", "64"], "no node of this machine holds one trial"),
])
def test_reproduce_refuses_in_one_line_before_anything_exists(tmp_path, capsys, monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SENSITIVITY_DATA_DIR", str(tmp_path / "nodata"))
    storage = tmp_path / "s.db"
    code = main(["reproduce", "liu2018", "--storage", f"sqlite:///{storage}", *args])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert not storage.exists() and not (tmp_path / "results").exists()


def test_reproduce_dry_run_forecasts_absent_files_and_runs_stand_ins(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SENSITIVITY_DATA_DIR", str(tmp_path / "nodata"))
    code = main(["reproduce", "liu2018", "--dry-run", "--scale", "0.01", "--frameworks", "torch", "--seeds", "2",
                 "--probe-steps", "3", "--storage", f"sqlite:///{tmp_path / 's.db'}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "mnist: run on mnist5k (stand-in)" in out and "cifar10: not run: files absent" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("torch ")]
    assert {(r[1], r[-1]) for r in rows} == {("mnist5k", "run"), ("cifar10", "absent")}
    assert all(r[3] == "12" for r in rows)  # 6 defaults x 2 seeds on torch
    assert not (tmp_path / "s.db").exists()


def _repo():
    from pathlib import Path
    return Path(__file__).resolve().parents[2]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
