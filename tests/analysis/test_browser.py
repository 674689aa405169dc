"""The report and the image exports as a person gets them, through Debian's Chromium (headless).

Skipped when no chromium is installed, unless SENSITIVITY_REQUIRE_BROWSER=1 makes that a failure.
"""
import html
import json
import os
import re
import shutil
import subprocess

import pytest
from analysis_data import make_study

from sensitivity.analysis.plots import STUDY_KINDS as KINDS, write_figure
from sensitivity.analysis.report import write_report

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--virtual-time-budget=20000"]
# Collects script errors from the first moment, then, once the page has loaded, writes what it found:
# the errors, the figure divs, and how many of them hold the svg plotly draws.
COLLECT_ERRORS = """<script>window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejected: ' + e.reason); });
</script>"""
REPORT_RENDERING = """<script>window.addEventListener('load', function () { setTimeout(function () {
  var figures = document.querySelectorAll('.plotly-graph-div'), drawn = 0;
  figures.forEach(function (f) { if (f.querySelector('svg.main-svg')) { drawn++; } });
  var out = document.createElement('pre'); out.id = 'render-check';
  out.textContent = JSON.stringify({errors: window.__errors, figures: figures.length, drawn: drawn});
  document.body.appendChild(out); }, 1500); });</script>"""


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        reason = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("SENSITIVITY_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " and SENSITIVITY_REQUIRE_BROWSER=1")
        pytest.skip(reason + "; set SENSITIVITY_REQUIRE_BROWSER=1 to make this a failure")
    return path


def browse(chromium, tmp_path, url, *action):
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *action, url],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of a small study (6 trials, one seed), with the error collector injected."""
    folder = tmp_path_factory.mktemp("browser")
    page = write_report(make_study(n_configs=6, seeds=1, defaults=(0,)), folder / "report.html")
    text = page.read_text()
    text = text.replace("<head>", "<head>" + COLLECT_ERRORS, 1).replace("</body>", REPORT_RENDERING + "</body>")
    checked = folder / "checked.html"
    checked.write_text(text)
    return checked


def test_every_figure_of_the_report_renders_without_script_errors(chromium, report, tmp_path):
    dom = browse(chromium, tmp_path, report.as_uri(), "--dump-dom")
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    assert found, "the page never finished loading"
    check = json.loads(html.unescape(found.group(1)))
    assert check["errors"] == []
    assert check["figures"] == len(KINDS) and check["drawn"] == len(KINDS)
    assert dom.count('class="main-svg"') >= len(KINDS)


def test_the_report_screenshot_is_not_blank(chromium, report, tmp_path):
    from PIL import Image

    shot = tmp_path / "report.png"
    browse(chromium, tmp_path, report.as_uri(), f"--screenshot={shot}", "--window-size=1200,3000")
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colours) > 50  # text, tables, axes and traces; a blank or failed page has a handful


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<svg"), (".pdf", b"%PDF")])
def test_image_export_through_kaleido(chromium, tmp_path, suffix, magic):
    out = write_figure(make_study(n_configs=6), "frontier", tmp_path / f"frontier{suffix}")
    data = out.read_bytes()
    assert magic in data[:200] and len(data) > 5000
