"""Resource use per framework and the framework-by-dataset summary."""
import pytest
from analysis_data import frame

from sensitivity.analysis.tables.resources import DEFAULTS, resource_use
from sensitivity.analysis.tables.summary import framework_summary
from sensitivity.analysis.table import NotEnoughData, trials_table


def run(framework, seed, accuracy, time, rss, dataset="mnist", **extra):
    return {"framework": framework, "seed": seed, "accuracy": accuracy, "train_time_s": time, "peak_rss_mb": rss,
            "cpu_percent": 100.0 * seed + 50, "throughput": 1000 / time, "dataset": dataset, **extra}


@pytest.fixture
def table():
    return trials_table(frame(
        run("torch", 0, 0.90, 10, 500), run("torch", 1, 0.92, 12, 520), run("torch", 2, 0.94, 30, 900,
                                                                             is_default=True),
        run("torch", 0, 0.10, 2, 400, status="diverged"),
        run("jax", 0, 0.95, 8, 700, gpu_utilization_percent=80.0, gpu_energy_j=120.0),
        run("jax", 0, 0.91, 9, 710, dataset="cifar10"),
        {"framework": "jax", "state": "FAIL", "status": "failed", "dataset": "mnist"}))


def test_medians_per_framework_over_trained_trials(table):
    usage = resource_use(table)
    everything = usage[usage["subset"] == "all trials"].set_index("framework")
    assert everything.loc["torch", "n_trials"] == 4 and everything.loc["torch", "n_seeds"] == 3
    assert everything.loc["torch", "train_time_s"] == pytest.approx(11.0)  # median of 2, 10, 12, 30
    assert everything.loc["torch", "peak_rss_mb"] == pytest.approx(510.0)
    assert everything.loc["jax", "gpu_utilization_percent"] == 80.0
    assert "gpu_peak_memory_mb" not in usage  # never recorded: left out
    defaults = usage[usage["subset"] == DEFAULTS].set_index("framework")
    assert defaults.index.tolist() == ["torch"] and defaults.loc["torch", "train_time_s"] == 30


def test_resources_need_recorded_figures():
    with pytest.raises(NotEnoughData, match="resource figures need"):
        resource_use(trials_table(frame({"framework": "torch", "accuracy": 0.9})))


def test_summary_per_dataset_and_framework(table):
    summary = framework_summary(table).set_index(["dataset", "framework"])
    assert summary.index.tolist() == [("cifar10", "jax"), ("mnist", "jax"), ("mnist", "torch")]
    torch = summary.loc[("mnist", "torch")]
    assert torch[["n_trials", "n_seeds", "n_ok", "n_diverged", "n_failed"]].tolist() == [4, 3, 3, 1, 0]
    assert torch["best_accuracy"] == 0.94 and torch["median_accuracy"] == 0.92  # ok trials only
    assert torch["train_time_s"] == pytest.approx(11.0)
    jax = summary.loc[("mnist", "jax")]
    assert jax["n_failed"] == 1 and jax["n_trials"] == 2 and jax["throughput"] == pytest.approx(125.0)


def test_summary_of_failures_only_still_counts_them():
    summary = framework_summary(trials_table(frame({"framework": "torch", "state": "FAIL", "status": "failed"})))
    assert summary[["framework", "n_trials", "n_failed"]].values.tolist() == [["torch", 1, 1]]
