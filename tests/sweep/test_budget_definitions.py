"""The two definitions of a published budget on a smaller dataset (issue 29): the source's epochs, or its
optimizer steps. On digits, TensorFlow's mnist-deep runs 418 steps at its published epochs and its published
20,000 at its published steps; each planned run records which (`budget`), and its budget_scale is 1 at both."""
import pytest

from sensitivity.config.defaults import DefaultsError, load_table, trial_fields
from sensitivity.core.budgets import BUDGETS
from sensitivity.sweep.crossover import Tuned, crossover_plan
from sensitivity.sweep.plans import default_plan, defaults_space, steps_per_epoch

BY_NAME = {e.name: e for e in load_table()}
# what each source script runs: read from its file (search_spaces/defaults.yaml's checked_against)
PUBLISHED_STEPS = {"tensorflow-mnist-deep": 20_000, "caffe-lenet": 10_000, "torch-train-on-mnist": 120_000,
                   "mxnet-train-mnist": 20 * 60_000 / 64, "chainer-train-mnist": 20 * 60_000 / 100}


def test_published_steps_are_the_source_scripts_own():
    for name, steps in PUBLISHED_STEPS.items():
        assert BY_NAME[name].published_steps("digits") == pytest.approx(steps), name
    assert BY_NAME["dlbench-shared"].published_steps("digits") is None  # no budget for digits at all


def test_at_steps_a_default_runs_its_published_steps_with_its_source_schedule():
    lenet = BY_NAME["caffe-lenet"]  # inv policy: gamma per step of the source
    per_epoch = steps_per_epoch("digits", 64, 0.2)
    at_epochs, epochs_scale = trial_fields(lenet, "digits", per_epoch)
    at_steps, steps_scale = trial_fields(lenet, "digits", per_epoch, budget="steps")
    assert at_epochs["iterations"] == round(lenet.published_epochs("digits") * per_epoch) == 181
    assert at_steps["iterations"] == 10_000 and at_steps["gamma"] == pytest.approx(lenet.config["gamma"])
    assert at_epochs["gamma"] > 50 * lenet.config["gamma"]  # compressed into 181 steps
    assert (epochs_scale.budget, steps_scale.budget) == BUDGETS
    assert epochs_scale.budget_scale == steps_scale.budget_scale == 1.0
    assert steps_scale.samples_scale == pytest.approx(1.0) and epochs_scale.samples_scale < 0.02
    assert steps_scale.attrs()["budget"] == "steps" and steps_scale.published_epochs == epochs_scale.published_epochs
    with pytest.raises(DefaultsError, match="allowed: epochs, steps"):
        trial_fields(lenet, "digits", per_epoch, budget="passes")


def test_a_transfer_plan_at_both_holds_each_definition_once_per_seed():
    space = defaults_space("t", ["torch", "tensorflow"], ["digits"], seeds=2)
    plan = default_plan(space, ["torch", "tensorflow"], ["digits"], seeds=2, transfer=True,
                        names=["tensorflow-mnist-deep"], record_correct=True, budgets=BUDGETS)
    assert len(plan) == 2 * 2 * 2 and len({p.key for p in plan}) == len(plan)
    steps = {p.attrs["budget"]: p.planned["iterations"] for p in plan}
    assert steps == {"epochs": 418, "steps": 20_000}
    assert {p.attrs["config_id"].endswith(":steps") for p in plan if p.attrs["budget"] == "steps"} == {True}
    assert {p.attrs["budget_scale"] for p in plan} == {1.0}
    only = default_plan(space, ["torch"], ["digits"], seeds=1, transfer=True, names=["tensorflow-mnist-deep"])
    assert [p.attrs["budget"] for p in only] == ["epochs"]  # the default keeps today's runs


def test_a_crossover_plan_runs_each_side_at_each_definition():
    space = defaults_space("c", ["torch"], ["mnist5k", "digits"], seeds=1)
    sides = [Tuned("mnist5k", BY_NAME["caffe-lenet"], "default caffe-lenet"),
             Tuned("digits", BY_NAME["torch-train-on-mnist"], "default torch-train-on-mnist")]
    plan = crossover_plan(space, "torch", sides, 1, budgets=BUDGETS)
    assert len(plan) == 2 * 2 * 2 and len({p.attrs["config_id"] for p in plan}) == 8
    lenet = {(p.planned["dataset"], p.attrs["budget"]): p.planned["iterations"] for p in plan
             if p.attrs["tuned_for"] == "mnist5k"}
    assert lenet[("mnist5k", "steps")] == lenet[("digits", "steps")] == 10_000
    assert lenet[("mnist5k", "epochs")] == 533 and lenet[("digits", "epochs")] == 181
