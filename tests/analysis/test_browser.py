"""The report and the image exports as a person gets them, through Debian's Chromium (headless).

Skipped when no chromium is installed, unless SENSITIVITY_REQUIRE_BROWSER=1 makes that a failure.
"""
import os

import pytest
from analysis_data import make_study

from sensitivity.analysis.report import browser
from sensitivity.analysis.figure_table import STUDY_KINDS as KINDS
from sensitivity.analysis.figure_table import write_figure
from sensitivity.analysis.report.page import write_report


@pytest.fixture(scope="module")
def chromium():
    try:
        return browser.chromium()
    except browser.BrowserMissing as reason:
        if os.environ.get("SENSITIVITY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason} and SENSITIVITY_REQUIRE_BROWSER=1")
        pytest.skip(f"{reason}; set SENSITIVITY_REQUIRE_BROWSER=1 to make this a failure")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of a small study (6 trials, one seed)."""
    return write_report(make_study(n_configs=6, seeds=1, defaults=(0,)), tmp_path_factory.mktemp("b") / "report.html")


def test_every_figure_of_the_report_renders_without_script_errors(chromium, report):
    check = browser.render_check(report)
    assert check["errors"] == []
    assert check["figures"] == len(KINDS) and check["drawn"] == len(KINDS) and sorted(check["kinds"]) == sorted(KINDS)
    assert check["svg"] >= len(KINDS)


def test_transfer_and_robustness_from_another_study_render(chromium, tmp_path):
    from test_robustness import record
    from test_transfer import table as transfer_table

    from sensitivity.analysis.table import trials_table

    defaults = trials_table(transfer_table())
    defaults.attrs.update(study="defaults", robustness={0: record([0.8, 0.3]), 3: record([0.9, 0.5])})
    page = write_report(make_study(n_configs=6, seeds=2), tmp_path / "with.html", others=[defaults])
    check = browser.render_check(page)
    assert check["errors"] == [] and {"transfer", "robustness", "seeds"} <= set(check["kinds"])
    assert check["drawn"] == check["figures"] == len(KINDS) + 2
    assert browser.main([str(page)]) == 0


def test_the_report_screenshot_is_not_blank(chromium, report, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    browser.browse(report.as_uri(), f"--screenshot={shot}", "--window-size=1200,3000", profile=tmp_path / "p")
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # text, tables, axes and traces; a blank or failed page has a handful


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<svg"), (".pdf", b"%PDF")])
def test_image_export_through_kaleido(chromium, tmp_path, suffix, magic):
    out = write_figure(make_study(n_configs=6), "frontier", tmp_path / f"frontier{suffix}")
    data = out.read_bytes()
    assert magic in data[:200] and len(data) > 5000


@pytest.mark.parametrize("skip, code", [((), 1), ((browser.SKIP_FLAG,), 0), (("env",), 0)])
def test_without_chromium_the_check_fails_unless_told_to_skip(monkeypatch, tmp_path, capsys, skip, code):
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    monkeypatch.delenv(browser.SKIP_VARIABLE, raising=False)
    if skip == ("env",):
        monkeypatch.setenv(browser.SKIP_VARIABLE, "1")
    page = tmp_path / "report.html"
    page.write_text("<html><head></head><body></body></html>")
    assert browser.main([*(a for a in skip if a != "env"), str(page)]) == code
    assert "rendering not checked" in capsys.readouterr()[code == 1]  # stdout when skipped, else stderr
