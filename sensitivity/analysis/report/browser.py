"""Check that a report renders as a person sees it: Debian's Chromium, headless, loads a copy of the page
with a script that collects script errors and counts the figures plotly drew.

`python -m sensitivity.analysis.report.browser REPORT.html` prints the check and exits 1 if a figure was not drawn
or a script failed (the main job ends with it). Without chromium it exits 1 too, saying the check was not
made, unless told to skip it: `--skip-without-browser`, or SENSITIVITY_SKIP_BROWSER_CHECK=1.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--virtual-time-budget=20000"]
# Collects script errors from the first moment, then, once the page has loaded, writes what it found: the
# errors, the figure divs, how many hold the svg plotly draws, and the kinds of those drawn.
COLLECT_ERRORS = """<script>window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });
window.addEventListener('unhandledrejection', function (e) { window.__errors.push('rejected: ' + e.reason); });
</script>"""
RENDER_CHECK = """<script>window.addEventListener('load', function () { setTimeout(function () {
  var figures = document.querySelectorAll('.plotly-graph-div'), kinds = [];
  figures.forEach(function (f) { if (f.querySelector('svg.main-svg')) { var box = f.closest('.figure'); kinds.push(box ? box.dataset.kind : '?'); } });
  var out = document.createElement('pre'); out.id = 'render-check';
  out.textContent = JSON.stringify({errors: window.__errors, figures: figures.length, drawn: kinds.length,
                                    kinds: kinds});
  document.body.appendChild(out); }, 1500); });</script>"""


SKIP_FLAG = "--skip-without-browser"
SKIP_VARIABLE = "SENSITIVITY_SKIP_BROWSER_CHECK"
USAGE = f"usage: python -m sensitivity.analysis.report.browser [{SKIP_FLAG}] REPORT.html"


class BrowserMissing(RuntimeError):
    """No chromium on this machine."""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise BrowserMissing("Debian's chromium is not installed (apt-get install chromium)")
    return path


def browse(url: str, *action: str, profile: Path) -> str:
    """Chromium's stdout for `url` with `action` flags (--dump-dom, --screenshot=FILE ...)."""
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *action, url], capture_output=True,
                          text=True, timeout=180)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def instrumented(page: Path, out: Path) -> Path:
    """A copy of `page` that collects script errors and reports what rendered."""
    text = page.read_text(encoding="utf-8")
    text = text.replace("<head>", "<head>" + COLLECT_ERRORS, 1).replace("</body>", RENDER_CHECK + "</body>")
    out.write_text(text, encoding="utf-8")
    return out


def render_check(page) -> dict:
    """{"errors": [...], "figures": N, "drawn": M, "kinds": [...], "svg": count} of the page in Chromium."""
    with tempfile.TemporaryDirectory(prefix="sensitivity-browser-") as folder:
        copy = instrumented(Path(page), Path(folder) / "checked.html")
        dom = browse(copy.as_uri(), "--dump-dom", profile=Path(folder) / "profile")
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    if not found:
        raise RuntimeError(f"{page}: the page never finished loading in chromium")
    check = json.loads(html.unescape(found.group(1)))
    check["svg"] = dom.count('class="main-svg"')
    return check


def main(argv=None) -> int:
    args = list(argv if argv is not None else sys.argv[1:])
    skip = SKIP_FLAG in args or os.environ.get(SKIP_VARIABLE) == "1"
    args = [a for a in args if a != SKIP_FLAG]
    if len(args) != 1 or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        check = render_check(args[0])
    except BrowserMissing as reason:
        if skip:
            print(f"{args[0]}: rendering not checked (skipped as asked): {reason}")
            return 0
        print(f"{args[0]}: rendering not checked: {reason}; to skip the check, pass {SKIP_FLAG} or set "
              f"{SKIP_VARIABLE}=1", file=sys.stderr)
        return 1
    ok = not check["errors"] and check["figures"] == check["drawn"] > 0
    print(f"{args[0]}: {check['drawn']} of {check['figures']} figures drawn in chromium "
          f"({', '.join(check['kinds'])}); script errors: {check['errors'] or 'none'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
