"""The HTML report: one page, plotly.js once, every section present or saying what would fill it."""
import re
import sys

import pytest
from analysis_data import make_study

from sensitivity.analysis.figure_table import STUDY_KINDS as KINDS
from sensitivity.analysis.report.page import environment, write_report
from sensitivity.analysis.table import trials_table

SECTIONS = ("study", "environment", "summary", "frontier", "importance", "isolation", "seeds", "resources",
            "divergence", "curves", "slice", "contour", "transfer", "robustness", "runtime")


@pytest.fixture(scope="module")
def small_report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "small.html"
    return write_report(make_study(n_configs=6, seeds=1), path).read_text()


def test_a_small_one_seed_study_gets_every_section_and_every_figure(small_report):
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in small_report
    figures = re.findall(r'<div class="figure" data-kind="([a-z-]+)">', small_report)
    assert sorted(figures) == sorted(KINDS)
    assert small_report.count('class="plotly-graph-div"') == len(KINDS)


def test_plotly_js_is_inline_once_and_nothing_is_fetched(small_report):
    assert small_report.count("plotly.js v") == 1  # the library's banner
    assert not re.search(r"<script[^>]+src=", small_report) and "<link" not in small_report
    assert small_report.count("Plotly.newPlot") == len(KINDS)


def test_sections_without_data_say_what_would_fill_them(small_report):
    assert "seed intervals need 2 or more seeds per configuration" in small_report
    assert "not computed for this study: run sensitivity transfer" in small_report
    assert "not computed for this study: run sensitivity robustness" in small_report
    assert "none was timed alone: run sensitivity timing SWEEP" in small_report


def test_report_of_failed_trials_explains_each_empty_section(tmp_path):
    text = write_report(make_study(n_configs=0, failed=2), tmp_path / "failed.html").read_text()
    assert "importance needs at least 2 complete trials with varied parameters" in text
    assert "the runtime-accuracy frontier needs at least one trial with status ok" in text
    assert "learning curves need trials with a per-epoch curve" in text
    # failures are still counted across the parameters' ranges: the one figure such a study has
    assert re.findall(r'<div class="figure" data-kind="([a-z-]+)">', text) == ["divergence"]


def test_environment_and_storage_are_shown(small_report):
    assert "testhost" in small_report and "Test CPU" in small_report and "abc1234" in small_report
    assert "torch-1.0" in small_report and "in memory" in small_report


def test_environment_lists_versions_per_framework():
    env = environment(trials_table(make_study(n_configs=3))).set_index("")["value"]
    assert env["torch version"] == "torch-1.0" and env["host"] == "testhost" and env["python"] == "3.11.7"


def test_another_study_fills_the_transfer_and_robustness_sections(tmp_path):
    from test_robustness import record
    from test_transfer import table as transfer_table

    defaults = trials_table(transfer_table())
    defaults.attrs.update(study="defaults-study", robustness={0: record([0.8, 0.3]), 3: record([0.9, 0.5])})
    text = write_report(make_study(n_configs=6, seeds=1), tmp_path / "with.html", others=[defaults]).read_text()
    figures = re.findall(r'<div class="figure" data-kind="([a-z-]+)">', text)
    assert sorted(figures) == sorted([*KINDS, "transfer", "robustness"])
    assert text.count("From study defaults-study.") == 2
    assert "defaults-study: 5 final trials" in text
    assert "one model per framework: no interval" in text  # each framework has one attacked model


def test_the_importance_section_says_whether_each_ranking_is_settled(small_report):
    """6 trials: the bootstrap cannot settle fANOVA's ranking, and the section says so, with the resamples."""
    section = small_report.split('<section id="importance">')[1].split("</section>")[0]
    assert "fANOVA&#x27;s ranking is not settled: " in section and "PED-ANOVA&#x27;s ranking is " in section
    assert re.search(r"\(\d+ bootstrap resamples\)|no bootstrap interval", section)
