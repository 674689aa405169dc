"""Every benchmarks/bench_*.py exits 1 when a target or its check is missed, and 0 when all are met.

The measurements are replaced by given figures (they take minutes), so what is tested is the verdict and
the exit; one real run of bench_analysis, from storage, shows a missed target exits 1 end to end."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "benchmarks"


def script(name: str):
    sys.path.insert(0, str(SCRIPTS))  # bench_adapters imports plain_loops from beside it
    try:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


def test_every_bench_script_is_covered_here():
    assert {p.stem for p in SCRIPTS.glob("bench_*.py")} == {"bench_adapters", "bench_analysis", "bench_dispatch",
                                                            "bench_forecast", "bench_long_sweep", "bench_long_trial",
                                                            "bench_overhead", "bench_scale", "bench_training_share"}


@pytest.mark.parametrize("second_starts, steady, main_starts, code",
                         [(0, 0.1, 2, 0), (1, 0.1, 2, 1), (0, 0.3, 2, 1), (0, 0.1, 3, 1)])
def test_bench_overhead_exits_1_on_a_missed_target(monkeypatch, tmp_path, second_starts, steady, main_starts, code):
    bench = script("bench_overhead")
    monkeypatch.setattr(bench, "start_head", lambda folder: (None, "127.0.0.1:1"))
    monkeypatch.setattr(bench, "stop_head", lambda head: None)
    monkeypatch.setattr(bench, "sweep", lambda *args: 30.0)
    monkeypatch.setattr(bench, "figures", lambda db, studies: {"cold_s": 10.0, "colds": 2, "steady_s": steady,
                                                               "between_s": 0.05, "second_starts": second_starts})
    monkeypatch.setattr(bench, "main_job_starts", lambda db: {"torch": main_starts})
    assert bench.main(["--frameworks", "torch", "--main-db", "sqlite:///x.db"]) == code


def test_bench_overhead_ends_the_heads_whole_process_group():
    """`ray start --block` and the servers it starts share its process group: stop_head ends all of them (procps'
    `kill -9 -PID` exited 0 and left a Ray head with its keeper running after every run)."""
    import subprocess
    import sys
    import time

    import psutil

    bench = script("bench_overhead")
    head = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, "
                             "'-c', 'import time; time.sleep(60)']); time.sleep(60)"], start_new_session=True)
    deadline = time.monotonic() + 10
    while not psutil.Process(head.pid).children() and time.monotonic() < deadline:
        time.sleep(0.05)
    [child] = psutil.Process(head.pid).children()
    bench.stop_head(head)
    assert head.returncode is not None  # reaped

    def ended() -> bool:  # gone, or a zombie its new parent has not reaped yet
        try:
            return child.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    deadline = time.monotonic() + 5  # the kill reaches the child as its scheduler lets it die: not at once
    while not ended() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ended()


@pytest.mark.parametrize("gap, speedup, code", [(0.1, 1.9, 0), (0.5, 1.9, 1), (0.1, 1.5, 1)])
def test_bench_dispatch_exits_1_on_a_missed_target(monkeypatch, gap, speedup, code):
    bench = script("bench_dispatch")
    monkeypatch.setattr(bench, "overhead", lambda folder, count: [gap] * 5)
    monkeypatch.setattr(bench, "trials_per_hour", lambda folder, count, parallel, epochs:
                        (100.0 * (speedup if parallel == 2 else 1), 100.0 * (speedup if parallel == 2 else 1), 10.0))
    assert bench.main([]) == code


def adapter_result(adapter_s: float, accuracy: float) -> dict:
    return {"framework": "torch", "regimes": ["native"], "times": {"native": [adapter_s], "plain": [1.0]},
            "others": 0.0, "dropped": 0, "agreement": {"native": 2.0, "plain": 2.0, "rtol": 0.0}, "version": "x",
            "costs": {}, "losses": {"native": [2.0, 1.0], "plain": [2.0, 1.0]},
            "accuracy": {"native": accuracy, "plain": 0.95}, "steps": 62, "data": "given"}


@pytest.mark.parametrize("adapter_s, accuracy, code", [(1.05, 0.95, 0), (1.5, 0.95, 1), (1.05, 0.2, 1)])
def test_bench_adapters_exits_1_on_a_missed_target_or_learning_check(monkeypatch, adapter_s, accuracy, code):
    bench = script("bench_adapters")
    monkeypatch.setattr(bench, "run_child", lambda name, argv: adapter_result(adapter_s, accuracy))
    assert bench.main(["--frameworks", "torch"]) == code


PRINTED = "Liu et al. 2018, natively here (no data): ...\nFindings of s: ...\n"  # as `findings` prints


def analysis_results(tmp_path, report_s: float, exported: int) -> dict:
    import pandas as pd
    report, export = tmp_path / "r.html", tmp_path / "t.parquet"
    report.write_text("<html></html>")
    pd.DataFrame({"number": range(exported)}).to_parquet(export)
    return {"pairs": [((report_s, "report: r.html\n"), (1.0, PRINTED))] * 2
            + [((1.0, "report: r.html\n"), (1.0, PRINTED))],  # the median run is judged
            "alone": (1.0, PRINTED),
            "export": (1.0, str(export)), "dashboard": (1.0, "200 OK True 1\n"), "files": (report, export),
            "floor": [(0.5, ""), (0.25, "")]}


@pytest.mark.parametrize("report_s, exported, met", [(3.0, 100, True), (50.0, 100, False), (3.0, 99, False)])
def test_bench_analysis_verdict(tmp_path, report_s, exported, met):
    bench = script("bench_analysis")
    assert bench.verdict(analysis_results(tmp_path, report_s, exported), 100, bench.target_for(100)) is met


def test_bench_analysis_targets_5_s_for_10000_trials_and_30_s_for_100000():
    bench = script("bench_analysis")
    assert [bench.target_for(n) for n in (100, 10_000, 10_001, 100_000)] == [5.0, 5.0, 30.0, 30.0]


def test_bench_analysis_judges_the_median_run(tmp_path):
    """One slow run of three (a burst of load beside it) does not decide; two do."""
    bench = script("bench_analysis")
    results = analysis_results(tmp_path, 3.0, 100)
    fast, slow = results["pairs"][0], ((50.0, "report: r.html\n"), (1.0, PRINTED))
    assert bench.verdict({**results, "pairs": [fast, slow, fast]}, 100, bench.target_for(100)) is True
    assert bench.verdict({**results, "pairs": [slow, fast, slow]}, 100, bench.target_for(100)) is False


def test_bench_analysis_verdict_needs_the_findings_alone_to_print_the_same(tmp_path):
    """`findings` after the report reads the findings it cached; computed afresh they must read the same."""
    bench = script("bench_analysis")
    results = {**analysis_results(tmp_path, 5.0, 100), "alone": (1.0, "Findings of s: other\n")}
    assert bench.verdict(results, 100, bench.target_for(100)) is False


def test_bench_analysis_prints_the_floor_before_any_trial_is_read_without_judging_it(tmp_path, capsys):
    """The two processes that only import and open the study: what of the target no trial's work can save."""
    bench = script("bench_analysis")
    results = {**analysis_results(tmp_path, 3.0, 100), "floor": [(40.0, ""), (0.75, "")]}
    assert bench.verdict(results, 100, bench.target_for(100)) is True
    assert "of which before any trial is read    40.75 s" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_analysis_from_storage_exits_1_on_an_impossible_target():
    proc = subprocess.run([sys.executable, str(SCRIPTS / "bench_analysis.py"), "--trials", "30", "--target-s", "0.01"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "target 0.01 s: MISSED)" in proc.stdout
    assert "NO" not in proc.stdout.replace("MISSED", ""), proc.stdout  # every check passed: only the time failed


@pytest.mark.parametrize("rate, code", [(60.0, 0), (10.0, 1)])
def test_bench_scale_exits_1_on_a_missed_target(monkeypatch, rate, code):
    bench = script("bench_scale")
    monkeypatch.setattr(bench, "open_study", lambda url, name, size, sampler, folder: (None, None, 0.0))
    monkeypatch.setattr(bench, "drive", lambda *args: {"open_s": 0.1, "burst_s": 1.0, "rate": rate,
                                                       "cpu_per_1000_s": 5.0, "rss_per_1000_mb": 1.0, "rss_mb": 300.0})
    assert bench.main(["--storage", "postgresql://h/db", "--samplers", "tpe", "--sizes", "10000"]) == code
    assert bench.main(["--storage", "sqlite:///x.db", "--samplers", "tpe", "--sizes", "10000"]) == 0  # no target


def long_sweep(overhead_growth: float, rss_per_trial_kib: float, fds_added: int, processes_added: int) -> tuple:
    """300 trials of 0.1 s in one slot, each followed by a sample of the driver; the overhead grows by
    `overhead_growth` over the sweep, the RSS by `rss_per_trial_kib` a trial, and from the middle on the
    driver holds `fds_added` more open files and `processes_added` more Ray processes."""
    import datetime
    from types import SimpleNamespace
    trials, samples, now = [], [], datetime.datetime(2026, 1, 1)
    for i in range(300):
        now += datetime.timedelta(seconds=0.1 + 0.05 * (1 + overhead_growth * i / 300))
        trials.append(SimpleNamespace(datetime_start=now - datetime.timedelta(seconds=0.12), datetime_complete=now,
                                      user_attrs={"wall_time_s": 0.1, "env": {"ray_actor_pid": 7}}))
        late = i >= 150
        ray = 9 + processes_added * late
        samples.append({"time": now + datetime.timedelta(seconds=0.01), "rss": 2**28 + rss_per_trial_kib * 1024 * i,
                        "fds": 35 + fds_added * late, "ray": ray, "workers": 1, "reaper": 1, "zombies": 0,
                        "processes": ray + 2})
    return trials, samples


@pytest.mark.parametrize("growth, rss_kib, fds, processes, code", [
    (0.0, 10.0, 2, 0, 0), (1.0, 10.0, 0, 0, 1), (0.0, 60.0, 0, 0, 1), (0.0, 10.0, 5, 0, 1), (0.0, 10.0, 0, 1, 1)])
def test_bench_long_sweep_exits_1_on_a_missed_target(monkeypatch, growth, rss_kib, fds, processes, code):
    bench = script("bench_long_sweep")
    monkeypatch.setattr(bench, "measure", lambda folder, trials, parallel, epochs, interval_s:
                        long_sweep(growth, rss_kib, fds, processes))
    assert bench.main([]) == code


def long_trial(cpu_growth: float, bytes_growth: float, epochs: int = 100) -> dict:
    """Figures of bench_long_trial: CPU seconds noted at each epoch's report, growing by `cpu_growth` per epoch
    from the first window to the last, and each report's bytes by `bytes_growth`."""
    cpu, sent, total = {}, {}, 0.0
    for epoch in range(1, epochs):
        step = 0.002 * (cpu_growth if epoch > epochs // 2 else 1.0)
        total += step
        cpu[epoch] = total
        sent[epoch] = int(1700 * (bytes_growth if epoch > epochs // 2 else 1.0))
    return {"cpu": cpu, "sent": sent, "end_bytes": 15_000, "left_bytes": 0, "wall_s": 10.0, "train_s": 5.0,
            "status": "ok", "final": 1, "curve": epochs}


@pytest.mark.parametrize("cpu_growth, bytes_growth, code", [(1.1, 1.0, 0), (2.0, 1.0, 1), (1.0, 10.0, 1)])
def test_bench_long_trial_exits_1_on_a_growth_beyond_1_5(monkeypatch, cpu_growth, bytes_growth, code):
    bench = script("bench_long_trial")
    monkeypatch.setattr(bench, "measure", lambda folder, epochs, window: long_trial(cpu_growth, bytes_growth))
    assert bench.main(["--epochs", "100", "--window", "20"]) == code


@pytest.mark.parametrize("alone, loaded, code", [(1.1, 0.9, 0), (0.7, 1.0, 1), (1.0, 1.3, 1)])
def test_bench_forecast_exits_1_on_a_forecast_beyond_25_percent(monkeypatch, alone, loaded, code):
    bench = script("bench_forecast")
    monkeypatch.setattr(bench, "measure", lambda folder, trials: {
        "alone": {"forecast": 14.0 * alone, "wall": 14.0, "notes": []},
        "loaded": {"forecast": 16.0 * loaded, "wall": 16.0, "notes": ["probe: taken while ..."]}})
    assert bench.main([]) == code


def stages_storage(tmp_path, stages, trials_each=1) -> str:
    """A SQLite storage holding a study per (name, start s, end s, train s a trial), each of `trials_each` complete
    trials that ran from start to end."""
    from datetime import datetime, timedelta

    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import FrozenTrial, TrialState

    storage = f"sqlite:///{tmp_path}/s.db"
    zero = datetime(2026, 1, 1)
    for name, start, end, train in stages:
        study = optuna.create_study(study_name=name, storage=storage)
        for _ in range(trials_each):
            study.add_trial(FrozenTrial(
                number=0, trial_id=0, state=TrialState.COMPLETE, value=0.5, datetime_start=zero + timedelta(0, start),
                datetime_complete=zero + timedelta(0, end), params={"x": 0.5},
                distributions={"x": FloatDistribution(0, 1)}, user_attrs={"train_time_s": train}, system_attrs={},
                intermediate_values={}))
    return storage


def test_bench_training_share_counts_the_time_between_stages_but_not_the_timing_gap(tmp_path, capsys):
    """Two stages of 2 slots (0-10 s, training 9 s a trial; 22-32 s, 5 s a trial) and a timing study between
    them (12-20 s): the gap around the timing study (10-22 s) is left out, so 28 train-seconds over 2 x 20
    slot-seconds, 70%: a miss of 75%, met at 70%."""
    storage = stages_storage(tmp_path, (("main-a", 0, 10, 9.0), ("main-a-alone", 12, 20, 7.0),
                                        ("main-b", 22, 32, 5.0)), trials_each=2)
    bench = script("bench_training_share")
    assert bench.main(["--storage", storage]) == 1
    out = capsys.readouterr().out
    assert "main-a-alone" not in out and "90.0%" in out and "50.0%" in out and "70.0%" in out and "MISSED" in out
    assert bench.main(["--storage", storage, "--target", "0.7"]) == 0


def test_bench_training_share_leaves_a_timing_study_after_the_last_stage_outside_the_span(tmp_path):
    """The timing study after every stage that trains (the main job runs it once they are done): the span is from
    the first trial to the last stage's end, 0-22 s, with nothing taken off for the timing at 25-33 s."""
    storage = stages_storage(tmp_path, (("main-a", 0, 10, 8.0), ("main-b", 12, 22, 8.0), ("main-a-alone", 25, 33, 8.0)))
    rows, span = script("bench_training_share").stage_shares(storage, "main-", 2)
    assert [row[0] for row in rows] == ["main-a", "main-b"] and span == 22.0


def test_bench_training_share_names_the_stages_that_ran_beside_each_other(tmp_path, capsys):
    """Two stages sharing the job's 2 slots (0-10 s and 5-15 s) and one after them (20-30 s): the first two are
    marked beside each other, and the job's share is over the span from the first trial to the last, 0 to 30 s
    (20 train-seconds over 60 slot-seconds), not over the sum of their windows."""
    train = 20.0 / 3
    storage = stages_storage(tmp_path, (("main-a", 0, 10, train), ("main-b", 5, 15, train), ("main-c", 20, 30, train)))
    bench = script("bench_training_share")
    rows, span = bench.stage_shares(storage, "main-", 2)
    assert [(row[0], row[6]) for row in rows] == [("main-a", ["main-b"]), ("main-b", ["main-a"]), ("main-c", [])]
    assert span == 30.0 and bench.main(["--storage", storage, "--target", "0.33"]) == 0
    out = capsys.readouterr().out
    assert "33.3%" in out and "shared its window's slots" in out
