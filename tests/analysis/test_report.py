"""The HTML report: one page, plotly.js once, every section present or saying what would fill it."""
import re
import sys

import pytest
from analysis_data import make_study

from sensitivity.analysis.plots import STUDY_KINDS as KINDS
from sensitivity.analysis.report import environment, write_report
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


def test_work_done_beside_comes_back_whole_and_its_error_is_raised_here():
    import os
    import threading
    import time

    from sensitivity.analysis.beside import Beside

    here, alone = os.getpid(), threading.active_count() == 1  # with other threads, done here
    beside = Beside(lambda table, claim: (os.getpid(), table["x"] * 2, "json" in sys.modules), warm=("json",))
    beside.hand_over({"x": "y" * 300_000})  # more than a pipe holds at once
    pid, doubled, warmed = beside.result()
    assert (pid != here) is alone and doubled == "y" * 600_000 and warmed
    failing = Beside(lambda table, claim: 1 / table)
    failing.hand_over(0)
    with pytest.raises(ZeroDivisionError):  # the child failed: the work is done here, and its error raised here
        failing.result()
    unpicklable = Beside(lambda table, claim: table())
    unpicklable.hand_over(lambda: os.getpid())  # a table that cannot travel is worked on here
    assert unpicklable.result() == here
    if alone:  # a child still working is ended at once, and reaped
        started = time.monotonic()
        slow = Beside(lambda table, claim: time.sleep(60) or "late")
        child = slow._pid
        slow.hand_over(1)
        slow.stop()
        assert time.monotonic() - started < 10
        with pytest.raises(ChildProcessError):
            os.waitpid(child, os.WNOHANG)


def test_shared_items_are_each_done_once_by_whichever_process_is_free():
    import os
    import threading
    import time

    from sensitivity.analysis.beside import Beside

    alone = threading.active_count() == 1  # with other threads, no child: everything is done here

    def work(table, claim):  # beside: slow items, so that this process takes its share
        return {item: (os.getpid(), time.sleep(0.2)) for item in iter(claim, None)}
    beside = Beside(work, shared=20)
    beside.hand_over(None)
    mine = {}
    for item in iter(beside.claim, None):
        mine[item] = (os.getpid(), time.sleep(0.1))
    theirs = beside.result()
    assert sorted([*mine, *theirs]) == list(range(20))  # every item once
    assert mine and bool(theirs) is alone and all(pid != os.getpid() for pid, _ in theirs.values())
    stopped = Beside(work, shared=5)
    stopped.stop()  # no sharing after a stop: the items are left to whoever reads the result
    assert stopped.claim() is None and stopped.result() == {}
