"""The trial contract's validation and JSON form. Portable."""
import json

import pytest
from pydantic import ValidationError

from sensitivity.spec import TrialResult, TrialSpec

pytestmark = pytest.mark.portable


def test_spec_round_trips_through_json():
    spec = TrialSpec(framework="torch", dataset="mnist5k", lr_policy="multistep", stepvalues=(10, 20))
    assert TrialSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("field, value", [
    ("batch_size", 0), ("lr", -1.0), ("epochs", 0), ("optimizer", "lbfgs"), ("momentum", 1.0),
    ("lr_policy", "poly"), ("device", "tpu"), ("unknown_field", 1), ("stepvalues", (5, 3)),
    ("lr", float("inf")), ("lr", float("nan")), ("timeout", float("inf")), ("weight_decay", float("inf")),
    ("gamma", float("nan")),
])
def test_spec_rejects_bad_values(field, value):
    with pytest.raises(ValidationError):
        TrialSpec(framework="torch", dataset="digits", **{field: value})


def test_result_json_has_the_contract_keys_and_no_nan():
    result = TrialResult(status="ok", accuracy=0.9, curve=[{"epoch": 1, "train_loss": 0.3}])
    data = json.loads(result.to_json())
    for key in ("status", "reason", "accuracy", "val_accuracy", "loss", "curve", "setup_time_s",
                "compile_time_s", "train_time_s", "test_time_s", "throughput", "peak_rss_mb", "cpu_percent",
                "gpu", "flops_per_s", "env"):
        assert key in data
    with pytest.raises(ValueError):
        TrialResult(status="ok", loss=float("nan")).to_json()


def test_failure_carries_no_metrics():
    spec = TrialSpec(framework="torch", dataset="digits")
    result = TrialResult.failure("timeout", "too slow", spec, "tail")
    assert result.accuracy is None and result.curve == [] and result.spec["framework"] == "torch"
