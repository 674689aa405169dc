"""The trial contract's validation and JSON form. Portable."""
import json

import pytest
from pydantic import ValidationError

from sensitivity.core.spec import TrialResult, TrialSpec

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


@pytest.mark.parametrize("field, value", [
    ("epochs", "2"), ("epochs", 2.5), ("epochs", True), ("batch_size", "64"), ("seed", 1.0), ("threads", "1"),
    ("lr", "0.1"), ("lr", True), ("momentum", "0.9"), ("stepvalues", ("3",)), ("stepvalues", (2.0,)),
    ("device", 0), ("dataset", b"digits"),
])
def test_spec_types_are_strict(field, value):
    with pytest.raises(ValidationError):
        TrialSpec(**{"framework": "torch", "dataset": "digits", field: value})


@pytest.mark.parametrize("field, too_big, largest", [
    ("epochs", 10**20, 10_000), ("threads", 10**9, 1_024), ("timeout", 1e30, 30 * 24 * 3600.0),
    ("batch_size", 2**21, 2**20), ("iterations", 10**9, 10**8), ("seed", 2**31, 2**31 - 1),
    ("stepsize", 10**9, 10**8),
])
def test_spec_bounds_refuse_above_and_take_the_largest(field, too_big, largest):
    with pytest.raises(ValidationError):
        TrialSpec(framework="torch", dataset="digits", **{field: too_big})
    assert getattr(TrialSpec(framework="torch", dataset="digits", **{field: largest}), field) == largest


@pytest.mark.parametrize("device, ok", [("cpu", True), ("gpu", True), ("gpu:0", True), ("gpu:9999", True),
                                        ("gpu:99999", False), ("gpu:01", False), ("gpu:-1", False),
                                        ("gpu:\u0663", False), ("cuda:0", False)])
def test_device_syntax(device, ok):
    if ok:
        assert TrialSpec(framework="torch", dataset="digits", device=device).device == device
    else:
        with pytest.raises(ValidationError, match="allowed cpu, gpu or gpu:N"):
            TrialSpec(framework="torch", dataset="digits", device=device)


def test_numbers_from_json_keep_their_types():
    spec = TrialSpec.from_json('{"framework": "torch", "dataset": "digits", "lr": 1, "stepvalues": [3, 5], '
                               '"lr_policy": "multistep"}')
    assert spec.lr == 1.0 and spec.stepvalues == (3, 5)
    with pytest.raises(ValidationError):
        TrialSpec.from_json('{"framework": "torch", "dataset": "digits", "epochs": "3"}')
