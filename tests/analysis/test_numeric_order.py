"""Numbers in numeric order on every axis: a categorical batch size (as search_spaces/mnist5k.yaml declares it,
here with its choices listed out of order) reads 32, 64, 128 wherever it is drawn, never 128, 32, 64."""
import re

import optuna
import pytest
from analysis_data import DISTRIBUTIONS, tell
from optuna.distributions import CategoricalDistribution

from sensitivity.analysis.figure_table import figure
from sensitivity.analysis.tables.parameter_values import bin_parameter, numeric_sort_key
from sensitivity.analysis.table import trials_table

ORDER = [32, 64, 128]


@pytest.fixture(scope="module")
def table():
    distributions = {**DISTRIBUTIONS, "batch_size": CategoricalDistribution((128, 32, 64))}
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=optuna.samplers.RandomSampler(seed=2))
    for index in range(18):
        params = {"framework": ("jax", "tensorflow", "torch")[index % 3], "lr": 10 ** (-3 + index % 4),
                  "batch_size": (128, 32, 64)[index % 3 if index < 9 else (index // 3) % 3], "momentum": 0.5,
                  "optimizer": "sgd"}
        for seed in range(2):
            study.enqueue_trial(params)
            tell(study, seed, f"c{index}", extra={"is_default": index == 0}, distributions=distributions)
    return trials_table(study)


def numbers(labels) -> list:
    return [int(float(label)) for label in labels]


def batch_sizes_in(labels) -> list:
    """The batch sizes named in configuration labels ("batch_size=64, lr=0.01"), in the labels' order."""
    return [int(re.search(r"batch_size=(\d+)", label).group(1)) for label in labels if "batch_size=" in label]


def subplot_axis(fig, title: str) -> str:
    """The x axis ("xaxis2") of the subplot titled `title`."""
    for i, annotation in enumerate(fig.layout.annotations, start=1):
        if annotation.text.split(" (")[0] == title:
            return "xaxis" if i == 1 else f"xaxis{i}"
    raise AssertionError(f"no subplot {title!r}")


def test_binning_orders_numbers_by_value():
    assert sorted([128, 32, 64, "adam"], key=numeric_sort_key) == [32, 64, 128, "adam"]
    import pandas as pd
    bins = bin_parameter(pd.Series([128, 32, 64, 32]), CategoricalDistribution((128, 32, 64)))
    assert bins.sort_values("order")["value"].drop_duplicates().tolist() == ["32", "64", "128"]
    assert bins["centre"].tolist() == [128.0, 32.0, 64.0, 32.0]  # a number has a place on a numeric axis


@pytest.mark.parametrize("kind", ["isolation", "divergence"])
def test_category_axes_of_binned_figures_read_32_64_128(table, kind):
    fig = figure(table, kind, parameters=["batch_size"])
    axis = fig.layout[subplot_axis(fig, "batch_size")]
    assert axis.type == "category" and numbers(axis.categoryarray) == ORDER


def test_slice_draws_batch_size_on_a_numeric_axis(table):
    fig = figure(table, "slice", parameters=["batch_size"])
    axis = fig.layout[subplot_axis(fig, "batch_size")]
    xs = [x for trace in fig.data for x in (trace.x if trace.x is not None else [])]
    assert axis.type != "category" and {float(x) for x in xs} == {32.0, 64.0, 128.0}


def test_contour_places_batch_size_by_value(table):
    fig = figure(table, "contour", parameters=["batch_size", "lr"])
    xs = sorted({float(x) for trace in fig.data if trace.type in ("contour", "heatmap") for x in trace.x})
    assert xs == [32.0, 64.0, 128.0]  # numbers on a numeric axis: 32 left of 64 left of 128


def test_seed_labels_list_configurations_in_the_order_of_their_values(table):
    fig = figure(table, "seeds", top=12)
    top_to_bottom = list(fig.layout.yaxis.categoryarray)[::-1]
    sizes = batch_sizes_in(top_to_bottom)
    assert sizes == sorted(sizes) and set(sizes) == set(ORDER)
