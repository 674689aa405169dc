"""Semantics as data: knobs, the composed Rule, the refusals, and the float64 formulas the contract uses.

`optim.rule_update` is the hand-written update of every Rule; here it is held, in float64, to the canonical
reference (`optim.reference_step`) and to each framework's documented native formulas
(`reference.native_step`), so the contract may use it as the yardstick of any knob setting.
"""
import numpy as np
import pytest

from sensitivity.core import reference, semantics
from sensitivity.core.optim import init_state, reference_step, rule_update, slot_names
from sensitivity.core.spec import TrialSpec

pytestmark = pytest.mark.portable

OPTIMIZERS = ["sgd", "momentum", "nesterov", "adam", "rmsprop"]


def spec(**kw):
    return TrialSpec(**{"framework": "torch", "dataset": "digits", **kw})


def _run_rule(rule, optimizer, weights, grads_per_step, rates, wd):
    slots = [{name: np.zeros_like(w) for name in slot_names(optimizer)} for w in weights]
    for t, (grads, lr) in enumerate(zip(grads_per_step, rates), start=1):
        new = []
        for w, g, state in zip(weights, grads, slots):
            w, updated = rule_update(rule, optimizer, w, g, state, lr, 0.9, wd, t)
            state.update(updated)
            new.append(w)
        weights = new
    return weights


def _problem(seed=0, steps=5):
    rng = np.random.default_rng(seed)
    weights = [rng.normal(size=(4, 3)), rng.normal(size=3)]
    grads = [[rng.normal(size=(4, 3)) * 0.1, rng.normal(size=3) * 0.1] for _ in range(steps)]
    rates = [0.05, 0.05, 0.02, 0.01, 0.01][:steps]
    return weights, grads, rates


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_rule_update_under_the_canonical_rule_is_the_canonical_reference(optimizer, wd):
    weights, grads, rates = _problem()
    expected, state = weights, init_state(optimizer, weights)
    for g, lr in zip(grads, rates):
        expected = reference_step(optimizer, expected, g, state, lr, 0.9, wd)
    actual = _run_rule(semantics.CANONICAL_RULE, optimizer, weights, grads, rates, wd)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("framework", sorted(semantics.NATIVE))
@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_rule_update_under_each_native_rule_is_its_documented_formulas(framework, optimizer, wd):
    weights, grads, rates = _problem(1)
    expected, state = weights, reference.native_state(optimizer, weights)
    for g, lr in zip(grads, rates):
        expected = reference.native_step(framework, optimizer, expected, g, state, lr, 0.9, wd)
    actual = _run_rule(semantics.NATIVE[framework].rule, optimizer, weights, grads, rates, wd)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)


def test_native_formulas_differ_where_the_docs_say_they_do():
    """A planted difference per knob: the reference is not the canonical one in disguise."""
    weights, grads, rates = _problem(2)
    rates = [0.05, 0.01, 0.05, 0.01, 0.05]  # a changing rate separates rate-inside from rate-outside momentum
    final = {}
    for framework in ("torch", "keras", "chainer", "mxnet", "jax", "theano"):
        for optimizer in OPTIMIZERS:
            state, w = reference.native_state(optimizer, weights), weights
            for g, lr in zip(grads, rates):
                w = reference.native_step(framework, optimizer, w, g, state, lr, 0.9, 0.01)
            final[framework, optimizer] = w[0]
    differs = lambda a, b, opt: not np.allclose(final[a, opt], final[b, opt], rtol=1e-9)  # noqa: E731
    assert differs("torch", "theano", "momentum")  # rate outside the buffer
    assert differs("chainer", "theano", "nesterov") and differs("torch", "theano", "nesterov")
    assert differs("keras", "theano", "adam") and differs("mxnet", "theano", "adam")  # epsilon uncorrected
    assert differs("torch", "theano", "rmsprop") and differs("jax", "theano", "rmsprop")  # rho; eps inside
    assert differs("keras", "theano", "momentum")  # decoupled weight decay (Keras' SGD is Caffe's form)
    assert not differs("keras", "theano", "sgd")  # without a velocity, decoupled decay is L2's
    assert not differs("mxnet", "theano", "momentum")  # MXNet's SGD is Caffe's form
    assert differs("mxnet", "theano", "nesterov")  # MXNet's NAG decays its velocity at the moved weight


def test_mxnet_nag_is_caffes_nesterov_without_weight_decay():
    weights, grads, rates = _problem(3)
    final = []
    for framework in ("mxnet", "theano"):
        state, w = reference.native_state("nesterov", weights), weights
        for g, lr in zip(grads, rates):
            w = reference.native_step(framework, "nesterov", w, g, state, lr, 0.9, 0.0)
        final.append(w[0])
    np.testing.assert_allclose(final[0], final[1], rtol=1e-12)


def test_semantics_default_is_native_and_init_follows_it():
    assert spec().semantics == "native"
    assert semantics.resolve(spec()).knobs == {k: "torch" for k in semantics.KNOBS}
    assert semantics.resolve(spec()).stock
    canonical = semantics.resolve(spec(semantics="canonical"))
    assert canonical.knobs == {k: "canonical" for k in semantics.KNOBS} and not canonical.stock
    assert semantics.resolve(spec(init="neutral")).init == "canonical"
    assert semantics.resolve(spec(init="neutral")).stock  # the initialiser is not an optimizer knob
    assert semantics.resolve(spec(semantics="canonical", init="framework")).init == "torch"


def test_knobs_compose_a_rule_field_by_field():
    resolved = semantics.resolve(spec(semantics="canonical", knobs={"update": "torch", "eps_rho": "keras"}))
    assert resolved.rule.momentum == "outside" and resolved.rule.nesterov == "outside"
    assert resolved.rule.adam_eps == "corrected"  # torch's Adam
    assert resolved.rule.adam_epsilon == 1e-7 and resolved.rule.rho == 0.9  # Keras' values
    assert resolved.rule.weight_decay == "l2" and not resolved.stock
    assert semantics.resolve(spec(knobs={"weight_decay": "keras"})).rule.weight_decay == "decoupled"


def test_frameworks_without_an_optimizer_library_never_run_stock_classes():
    for framework in ("theano", "pytensor"):
        resolved = semantics.resolve(spec(framework=framework))
        assert not resolved.stock and resolved.rule == semantics.CANONICAL_RULE


@pytest.mark.parametrize("fields, message", [
    (dict(optimizer="nesterov", momentum=0.0), "torch: optimizer nesterov with momentum 0"),
    (dict(knobs={"schedule": "keras"}), "torch: knobs.schedule: keras's scheduler cannot step torch"),
    (dict(framework="theano", lr_policy="step", knobs={"schedule": "theano"}), "theano has no learning-rate"),
    (dict(knobs={"update": "cafe"}), "knobs.update: unknown source 'cafe'"),
    (dict(knobs={"optimiser": "torch"}), "knobs.optimiser: unknown knob"),
])
def test_what_a_framework_cannot_express_is_refused_in_one_line(fields, message):
    from pydantic import ValidationError
    with pytest.raises(ValidationError) as caught:
        spec(**fields)
    text = caught.value.errors()[0]["msg"]
    assert message in text and "allowed" in text and "\n" not in text


def test_canonical_nesterov_without_momentum_is_allowed():
    spec(optimizer="nesterov", momentum=0.0, semantics="canonical")


@pytest.mark.parametrize("source", ["torch", "keras", "jax", "mxnet", "chainer"])
def test_drawn_initial_weights_follow_the_documented_distribution(source):
    shapes = [((50, 20, 5, 5), (50,)), ((800, 500), (500,))]
    init = semantics.NATIVE[source].init
    for (kernel, bias), (kernel_shape, _) in zip(semantics.draw_init(source, shapes, seed=4), shapes):
        expected = semantics.expected_moments(init, kernel_shape)
        for values, moments in ((kernel, expected["kernel"]), (bias, expected["bias"])):
            values = values.astype(np.float64)
            assert np.abs(values).max() <= moments["bound"] * (1 + 1e-6)
            if moments["var"]:
                assert abs(values.var() / moments["var"] - 1) < 5 * np.sqrt(2 / values.size)
            else:
                assert not values.any()


def test_describe_names_the_stock_class_and_the_scheduler():
    described = semantics.describe(spec(optimizer="adam", lr_policy="step"))
    assert described["optimizer"].startswith("torch.optim.Adam") and described["schedule"].startswith("StepLR")
    described = semantics.describe(spec(semantics="canonical"))
    assert "rule_update" in described["optimizer"] and "lr_schedule" in described["schedule"]
