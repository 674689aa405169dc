"""The ablation path's logic: which knobs are walked, the greedy choice, and ends that are the set-ups.

Portable: no framework and no Ray (the end-to-end run is tests/sweep/test_ablate_command.py).
"""
import pytest

from sensitivity.core import semantics
from sensitivity.experiments.ablation import FRAMEWORK, AblationError, Point, Setup, knobs_to_walk, walk
from sensitivity.core.spec import TrialSpec

pytestmark = pytest.mark.portable


def base(**kw):
    return TrialSpec(**{"framework": "torch", "dataset": "mnist5k", "optimizer": "momentum", "lr": 0.05, **kw})


def ends(a: str, b: str):
    start, end = Setup.parse(a, "--from"), Setup.parse(b, "--to")
    return Point.of(start.framework, start.knobs()), Point.of(end.framework, end.knobs())


def test_canonical_to_native_walks_the_knobs_this_configuration_uses():
    walked, inert = knobs_to_walk(base(), *ends("torch:canonical", "torch:native"))
    assert walked == ["init", "update"]  # momentum SGD: the rate inside or outside the buffer
    assert inert == ["weight_decay", "eps_rho", "schedule"]  # wd 0; no epsilon in momentum SGD; a fixed rate
    walked, inert = knobs_to_walk(base(optimizer="rmsprop", weight_decay=0.01, lr_policy="step"),
                                  *ends("torch:canonical", "torch:native"))
    assert walked == ["init", "eps_rho", "schedule"] and inert == ["update", "weight_decay"]  # torch: rho 0.99


def test_across_frameworks_the_framework_is_a_knob_and_carries_its_scheduler():
    walked, inert = knobs_to_walk(base(lr_policy="step", weight_decay=0.001),
                                  *ends("torch:native", "tensorflow:native"))
    assert walked == ["init", "update", "weight_decay", FRAMEWORK] and inert == ["eps_rho"]
    start, end = ends("torch:native", "tensorflow:native")
    moved = start.flipped(FRAMEWORK, end)
    assert moved.framework == "tensorflow" and dict(moved.knobs)["schedule"] == "tensorflow"


def _planted(effects: dict):
    """A fake runner: a point's score is the sum of the planted effects of the knob values it holds."""
    runs = []

    def run_points(points):
        runs.append([p for p, _ in points])
        return {point: [point] for point, _ in points}

    def score(numbers):
        point = numbers[0]
        knobs = dict(point.knobs)
        return sum(effect for (knob, value), effect in effects.items()
                   if (knob == FRAMEWORK and point.framework == value) or knobs.get(knob) == value)
    return run_points, score, runs


def test_the_greedy_path_takes_the_largest_effect_first_and_ends_at_the_second_set_up():
    run_points, score, runs = _planted({("init", "tensorflow"): 0.10, ("update", "tensorflow"): -0.02,
                                        (FRAMEWORK, "tensorflow"): 0.05})
    spec = base(lr_policy="step")
    steps, inert = walk(spec, Setup("torch", "native"), Setup("tensorflow", "native"), 3, run_points, score)
    assert [s.knob for s in steps] == ["", "init", FRAMEWORK, "update"]
    assert inert == ["weight_decay", "eps_rho"]
    assert steps[0].point == Point.of("torch", Setup("torch", "native").knobs())
    assert steps[-1].point == Point.of("tensorflow", Setup("tensorflow", "native").knobs())
    assert semantics.resolve(steps[0].point.spec(spec)).stock  # both ends run the stock classes
    assert semantics.resolve(steps[-1].point.spec(spec)).stock
    assert semantics.resolve(steps[1].point.spec(spec)).stock  # another initialiser: still torch.optim
    assert not semantics.resolve(steps[2].point.spec(spec)).stock  # tensorflow with torch's update: rule_update
    assert [len(r) for r in runs] == [1, 3, 2, 1]  # every knob left is tried in each round


def test_a_point_keeps_the_configuration_and_names_its_regime():
    spec = base(lr=0.01, epochs=3, seed=4)
    start, end = ends("torch:canonical", "torch:native")
    middle = start.flipped("init", end).spec(spec)
    assert (middle.lr, middle.epochs, middle.seed) == (0.01, 3, 4)
    assert middle.knobs["init"] == "torch" and middle.knobs["update"] == "canonical"
    assert end.spec(spec).semantics == "native" and start.spec(spec).semantics == "canonical"


@pytest.mark.parametrize("text, message", [("caffe:native", "unknown framework 'caffe'"),
                                           ("torch:shipped", "regime 'shipped'")])
def test_bad_set_ups_are_refused_in_one_line(text, message):
    with pytest.raises(AblationError, match=message):
        Setup.parse(text, "--from")
