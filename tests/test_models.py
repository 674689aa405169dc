"""Model specs: shapes, sizes, costs, initial weights. Portable: numpy only (runs in both environments)."""
import numpy as np
import pytest

from sensitivity.core.models import MODELS, Pool, get_model, init_weights, nhwc_dense_rows, pooled_size

pytestmark = pytest.mark.portable


@pytest.mark.parametrize("name, input_shape, count", [
    ("lenet5", (1, 28, 28), 431_080),
    ("tf_mnist_deep", (1, 28, 28), 3_274_634),
    ("cifar10_quick", (3, 32, 32), 145_578),
    ("mlp", (1, 8, 8), 64 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10),
])
def test_parameter_counts(name, input_shape, count):
    assert get_model(name).param_count(input_shape, 10) == count


def test_cifar10_quick_pools_with_caffe_ceil_rounding():
    shapes = get_model("cifar10_quick").shapes((3, 32, 32))
    pooled = [s[1] for layer, s in zip(MODELS["cifar10_quick"].layers, shapes) if isinstance(layer, Pool)]
    assert pooled == [16, 8, 4]
    floor_model = MODELS["cifar10_quick"].__class__(
        "floor", tuple(Pool(l.kind, l.kernel, l.stride, ceil=False) if isinstance(l, Pool) else l
                       for l in MODELS["cifar10_quick"].layers))
    assert floor_model.param_count((3, 32, 32), 10) == 116_906


@pytest.mark.parametrize("size, kernel, stride, ceil, out", [
    (24, 2, 2, True, 12), (32, 3, 2, True, 16), (32, 3, 2, False, 15), (8, 3, 2, True, 4), (7, 2, 2, True, 4),
])
def test_pooled_size(size, kernel, stride, ceil, out):
    assert pooled_size(size, kernel, stride, ceil) == out


def test_resolve_sizes_the_last_layer_to_the_classes():
    assert get_model("lenet5").param_count((1, 28, 28), 100) == 431_080 + 500 * 90 + 90


def test_flops_count_conv_and_dense_multiply_adds():
    # lenet5: conv1 20x24x24x25, conv2 50x8x8x500, fc 800x500, fc 500x10; two FLOPs per multiply-add
    expected = 2 * (20 * 24 * 24 * 25 + 50 * 8 * 8 * 20 * 25 + 800 * 500 + 500 * 10)
    assert get_model("lenet5").flops_per_sample((1, 28, 28), 10) == expected


def test_initial_weights_depend_on_seed_only():
    model = get_model("lenet5")
    a, b, c = (init_weights(model, (1, 28, 28), 10, seed) for seed in (0, 0, 1))
    assert all(np.array_equal(x[0], y[0]) for x, y in zip(a, b))
    assert not np.array_equal(a[0][0], c[0][0])
    kernel, bias = a[0]
    assert kernel.shape == (20, 1, 5, 5) and kernel.dtype == np.float32 and not bias.any()
    assert np.abs(kernel).max() <= np.sqrt(3 / 25)


def test_nhwc_dense_rows_matches_a_flatten_of_nhwc():
    rng = np.random.default_rng(0)
    x = rng.random((2, 3, 4, 5))
    kernel = rng.random((60, 7))
    nchw = x.reshape(2, -1) @ kernel
    nhwc = x.transpose(0, 2, 3, 1).reshape(2, -1) @ nhwc_dense_rows(kernel, (3, 4, 5))
    np.testing.assert_allclose(nhwc, nchw)


def test_unknown_model_names_the_allowed():
    with pytest.raises(KeyError, match="lenet5"):
        get_model("resnet")


def test_shapes_refuses_a_layer_that_would_output_nothing():
    with pytest.raises(ValueError, match=r"layer 2 \(Conv\) would output \(50, -2, -2\)"):
        get_model("lenet5").shapes((1, 8, 8))
