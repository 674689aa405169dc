"""Figures: every kind draws from its computed data, marks framework defaults, shows n where frameworks
are compared, and writes self-contained HTML. Pixels are the browser test's business."""
import re

import plotly.graph_objects as go
import pytest
from analysis_data import frame

from sensitivity.analysis.figure_table import FIGURES, STUDY_KINDS, compute_of, figure, module_of, write_figure
from sensitivity.analysis.figures.style import DEFAULT_NAME
from sensitivity.analysis.table import NotEnoughData, trials_table

COMPARING = ("frontier", "isolation", "seeds", "resources", "divergence", "curves", "slice")


@pytest.fixture(scope="module")
def table(seeded_study):
    return trials_table(seeded_study)


def test_the_table_maps_every_kind_to_a_module_with_compute_and_plot():
    assert list(FIGURES) == ["findings", "frontier", "designed-indices", "designed-interactions", "importance",
                             "isolation", "seeds", "resources", "divergence", "curves", "slice", "contour", "parallel",
                             "dependence", "crossover", "transfer", "robustness", "ablation",
                             "tunability"]
    assert all(callable(compute_of(kind)) and callable(module_of(kind).plot) for kind in FIGURES)


def test_plot_and_export_offer_every_kind_of_the_table():
    from sensitivity.cli import build_parser
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    plot = next(a for a in commands["plot"]._actions if a.dest == "kind")
    export = next(a for a in commands["export"]._actions if a.dest == "figure")
    assert list(plot.choices) == list(export.choices) == list(FIGURES)


@pytest.fixture(scope="module")
def figures(table):
    return {kind: figure(table, kind) for kind in STUDY_KINDS}


@pytest.mark.parametrize("kind", list(STUDY_KINDS))
def test_every_kind_draws_a_figure_with_data(figures, kind):
    fig = figures[kind]
    assert isinstance(fig, go.Figure) and fig.layout.title.text
    if kind == "parallel":  # one line a trial across the axes
        assert len(fig.data[0].dimensions) >= 3 and len(fig.data[0].dimensions[0].values)
        return
    assert any(len(trace.x if trace.x is not None else trace.y) for trace in fig.data)


# a parallel-coordinates line cannot carry a star, and partial dependence draws a surrogate's curves, not trials
@pytest.mark.parametrize("kind", [k for k in STUDY_KINDS if k not in ("importance", "findings", "parallel", "dependence")])
def test_framework_defaults_are_starred(figures, kind):
    marks = [t for t in figures[kind].data if t.name == DEFAULT_NAME]
    assert marks and sum(len(t.x) for t in marks) >= 1
    assert sum(t.showlegend for t in marks) == 1  # one legend entry however many subplots


def test_importance_names_the_defaults_in_the_hover_never_on_the_bars(figures):
    bars = [trace for trace in figures["importance"].data if trace.type == "bar"]
    assert all(trace.text is None and trace.orientation == "h" for trace in bars)
    assert any("framework defaults: " in text for trace in bars for text in trace.hovertext)
    assert figures["importance"].layout.yaxis.automargin  # names are never cut ("framewo")


@pytest.mark.parametrize("kind", COMPARING)
def test_figures_comparing_frameworks_show_n(figures, kind):
    labels = []
    for trace in figures[kind].data:
        labels.append(trace.name or "")
        for attribute in ("hovertext", "x", "text"):
            value = getattr(trace, attribute, None)
            labels.extend(value if isinstance(value, (tuple, list)) else [value] if isinstance(value, str) else [])
    assert any(re.search(r"n=\d+", str(label)) for label in labels)


def test_seeds_figure_says_n_1_and_draws_no_interval_for_one_seed():
    rows = [{"framework": fw, "lr": 0.01, "seed": 0, "config_id": fw, "accuracy": 0.9, "train_time_s": 1}
            for fw in ("torch", "jax")]
    fig = figure(trials_table(frame(*rows)), "seeds")
    traces = [t for t in fig.data if t.name != DEFAULT_NAME]
    assert all(t.text == ("n=1",) for t in traces)
    assert all(all(v != v for v in t.error_x.array) for t in traces)  # NaN: no bar


def test_options_reach_the_function_that_takes_them(table):
    fig = figure(table, "seeds", top=3)
    assert len({y for t in fig.data for y in t.y}) == 3
    isolation = figure(table, "isolation", parameters=["lr"], bins=2)
    assert len(isolation.layout.annotations) == 1  # one subplot title: lr
    with pytest.raises(ValueError, match="unknown option 'colour' for frontier"):
        figure(table, "frontier", colour="red")
    with pytest.raises(ValueError, match="unknown figure kind 'pie'; allowed: findings, frontier, designed-indices"):
        figure(table, "pie")


def test_write_figure_html_is_self_contained(table, tmp_path):
    out = write_figure(table, "frontier", tmp_path / "sub" / "frontier.html")
    text = out.read_text()
    assert out.parent.name == "sub" and "Plotly.newPlot" in text
    assert not re.search(r"<script[^>]+src=", text)  # plotly.js inline, nothing fetched
    assert len(text) > 1_000_000


def test_write_figure_refuses_unknown_formats_and_empty_data(table, tmp_path):
    with pytest.raises(ValueError, match="allowed endings: .html, .png, .svg, .pdf"):
        write_figure(table, "frontier", tmp_path / "frontier.jpg")
    with pytest.raises(NotEnoughData):
        write_figure(trials_table(frame({"framework": "torch", "state": "FAIL", "status": "failed"})), "frontier",
                     tmp_path / "f.html")


def test_image_export_without_a_browser_says_what_to_install(table, tmp_path, monkeypatch):
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    with pytest.raises(RuntimeError, match="install Debian's `chromium` package"):
        write_figure(table, "frontier", tmp_path / "frontier.png")
    assert not (tmp_path / "frontier.png").exists()


@pytest.mark.parametrize("kind", list(STUDY_KINDS))
def test_every_kind_is_drawn_in_the_white_template(figures, kind):
    """plotly_white, taken as plotly's default (style.py) rather than validated again in each figure."""
    import plotly.io as pio

    layout = figures[kind].to_plotly_json()["layout"]
    assert layout["template"]["layout"]["plot_bgcolor"] == pio.templates["plotly_white"].layout.plot_bgcolor == "white"
