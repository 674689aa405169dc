"""Divergence rates across each parameter's range, with counts."""
import pytest
from analysis_data import frame

from sensitivity.analysis.tables.divergence import divergence_rates
from sensitivity.analysis.table import NotEnoughData, trials_table


def row(framework, optimizer, lr, status="ok", **extra):
    state = {"ok": "COMPLETE", "diverged": "COMPLETE", "failed": "FAIL", "pruned": "PRUNED"}[status]
    return {"framework": framework, "optimizer": optimizer, "lr": lr, "status": status, "state": state,
            "accuracy": 0.1 if status == "diverged" else 0.9, "train_time_s": 1.0, **extra}


@pytest.fixture
def table():
    return trials_table(frame(
        row("torch", "sgd", 1e-4), row("torch", "sgd", 2e-4), row("torch", "sgd", 0.5, "diverged"),
        row("torch", "sgd", 0.9, "diverged", seed=1), row("torch", "sgd", 0.001, "failed"),
        row("torch", "sgd", 0.8, "pruned"),  # outcome unknown: not counted
        row("torch", "adam", 0.5, is_default=True), row("jax", "sgd", 0.7, "diverged")))


def test_rates_per_category_and_framework(table):
    rates = divergence_rates(table, parameters=["optimizer"]).set_index(["value", "framework"])
    sgd = rates.loc[("sgd", "torch")]
    assert sgd[["n_trials", "n_ok", "n_diverged", "n_failed", "n_seeds"]].tolist() == [5, 2, 2, 1, 2]
    assert sgd["divergence_rate"] == pytest.approx(2 / 5) and sgd["failure_rate"] == pytest.approx(1 / 5)
    assert rates.loc[("adam", "torch"), "divergence_rate"] == 0 and rates.loc[("adam", "torch"), "n_defaults"] == 1
    assert rates.loc[("sgd", "jax"), "divergence_rate"] == 1


def test_numeric_parameters_are_binned_over_their_range(table):
    rates = divergence_rates(table, parameters=["lr"], bins=2)  # lr spans 1e-4..0.9: log bins
    torch = rates[rates["framework"] == "torch"].set_index("order")
    assert torch.loc[0, "value"].startswith("[0.0001,") and torch.loc[0, "n_trials"] == 3
    assert torch.loc[0, "divergence_rate"] == 0 and torch.loc[0, "n_failed"] == 1
    assert torch.loc[1, ["n_trials", "n_diverged"]].tolist() == [3, 2]
    assert rates["parameter"].unique().tolist() == ["lr"]


def test_every_tuned_parameter_but_the_framework_by_default(table):
    assert set(divergence_rates(table)["parameter"]) == {"lr", "optimizer"}


def test_divergence_needs_parameters():
    with pytest.raises(NotEnoughData, match="divergence rates need"):
        divergence_rates(trials_table(frame({"framework": "torch", "accuracy": 0.9})))
