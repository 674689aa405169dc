"""packaged.py: digits, mnist5k and mnist1d, which ship in packages (no download, no file written)."""
import numpy as np
import pytest

from sensitivity.datasets import REGISTRY, load, packaged


def assert_contract(ds, n_train, n_test):
    assert ds.x_train.shape == (n_train, *REGISTRY[ds.name].input_shape)
    assert ds.x_test.shape == (n_test, *REGISTRY[ds.name].input_shape)
    assert ds.x_train.dtype == np.float32 and ds.y_train.dtype == np.int64 and ds.y_test.dtype == np.int64
    assert ds.x_train.min() >= 0.0 and ds.x_test.min() >= 0.0
    assert ds.x_train.max() == pytest.approx(1.0) and ds.x_test.max() <= 1.0
    assert set(np.unique(ds.y_train)) == set(range(10)) == set(np.unique(ds.y_test))


def label_changes(y):
    return int(np.count_nonzero(np.diff(y)))


@pytest.fixture(scope="module")
def mnist5k():
    return packaged.load_mnist5k()


@pytest.fixture(scope="module")
def mnist1d():
    return packaged.load_mnist1d()


def test_digits_is_a_stratified_80_20_split():
    ds = packaged.load_digits()
    assert_contract(ds, 1438, 359)
    totals = np.bincount(ds.y_train) + np.bincount(ds.y_test)
    assert totals.sum() == 1797
    assert np.array_equal(np.bincount(ds.y_test), np.round(0.2 * totals).astype(int))
    again = packaged.load_digits()
    assert np.array_equal(ds.x_train, again.x_train) and np.array_equal(ds.y_test, again.y_test)


def test_mnist5k_is_4000_1000_stratified_and_shuffled(mnist5k):
    assert_contract(mnist5k, 4000, 1000)
    assert np.bincount(mnist5k.y_train).tolist() == [400] * 10
    assert np.bincount(mnist5k.y_test).tolist() == [100] * 10
    assert label_changes(mnist5k.y_train) > 3000  # sorted by class would give 9
    assert label_changes(mnist5k.y_test) > 700
    assert 0.05 < mnist5k.x_train.mean() < 0.25  # scaled from 0..255, mostly background


def test_mnist5k_train_and_test_are_disjoint(mnist5k):
    train = {row.tobytes() for row in mnist5k.x_train}
    assert not any(row.tobytes() in train for row in mnist5k.x_test)


def test_mnist1d_is_generated_and_scaled_on_the_training_set(mnist1d):
    assert_contract(mnist1d, 4000, 1000)
    assert mnist1d.x_train.min() == 0.0 and mnist1d.x_train.max() == 1.0
    assert np.count_nonzero(mnist1d.x_train == 0.0) == 1 and np.count_nonzero(mnist1d.x_train == 1.0) == 1
    assert 0.0 < mnist1d.x_test.min() and mnist1d.x_test.max() < 1.0  # inside the training range: not clipped
    assert label_changes(mnist1d.y_train) > 3000


def test_mnist1d_leaves_the_global_random_state_alone():
    np.random.seed(123)
    expected = np.random.random_sample()
    np.random.seed(123)
    packaged.load_mnist1d()
    assert np.random.random_sample() == expected


def test_mnist1d_writes_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    packaged.load_mnist1d()
    assert list(tmp_path.iterdir()) == []


def test_load_goes_through_the_cache(monkeypatch):
    first = load("digits")
    monkeypatch.setattr(packaged, "load_digits", lambda: pytest.fail("the cache was not used"))
    second = load("digits")
    assert np.array_equal(first.x_train, second.x_train) and second.name == "digits"


@pytest.mark.parametrize("name", ["digits", "mnist5k"])
def test_the_halves_are_disjoint_stratified_halves(name):
    from sensitivity import datasets

    whole, a, b = (datasets.load(n) for n in (name, f"{name}-a", f"{name}-b"))
    for split in ("train", "test"):
        x, xa, xb = (getattr(d, f"x_{split}").reshape(len(getattr(d, f"y_{split}")), -1) for d in (whole, a, b))
        assert len(xa) + len(xb) == len(x) and abs(len(xa) - len(xb)) <= 1
        rows = {r.tobytes() for r in x}
        assert {r.tobytes() for r in xa} | {r.tobytes() for r in xb} <= rows
        assert sorted(np.bincount(getattr(a, f"y_{split}"), minlength=10) - np.bincount(
            getattr(b, f"y_{split}"), minlength=10))[-1] <= 1  # stratified
    assert not {r.tobytes() for r in a.x_test} & {r.tobytes() for r in b.x_test}
