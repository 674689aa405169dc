"""Writing a figure: .html (self-contained: plotly.js inline, so it opens offline), or .png, .svg, .pdf
through kaleido 1.x and a Chromium (Debian's `chromium` package; kaleido finds it by itself).

The first image starts kaleido's sync server, one browser kept for every later image in the process:
the first costs seconds, later ones a fraction of a second.
"""
from __future__ import annotations

import os
from pathlib import Path

FORMATS = ("html", "png", "svg", "pdf")
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1100, 600


def write(fig, out_path, width: int | None = None, height: int | None = None) -> Path:
    out = Path(out_path)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"cannot write a figure as {out.name!r}; allowed endings: "
                         + ", ".join(f".{f}" for f in FORMATS))
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        fig.write_html(out, include_plotlyjs=True, full_html=True, config={"displaylogo": False})
    else:
        out.write_bytes(image(fig, fmt, width, height))
    return out


def image(fig, fmt: str, width: int | None = None, height: int | None = None) -> bytes:
    """The figure as png, svg or pdf bytes."""
    try:
        # lazy: choreographer, kaleido
        import kaleido
        from choreographer.browsers.chromium import Chromium
    except ImportError:
        raise ImportError("image export needs kaleido: pip install 'sensitivity[plots]'") from None
    browser = Chromium.find_browser(skip_local=False)  # kaleido's own search, BROWSER_PATH first
    if browser is None or not os.access(browser, os.X_OK):  # checked here: kaleido's server thread would hang
        raise RuntimeError(f"image export needs a Chromium{f' (none at {browser})' if browser else ''}: install "
                           "Debian's `chromium` package (apt-get install chromium), or write .html")
    kaleido.start_sync_server(silence_warnings=True)  # once per process; later calls are no-ops
    opts = dict(format=fmt, width=width or fig.layout.width or DEFAULT_WIDTH,
                height=height or fig.layout.height or DEFAULT_HEIGHT)
    return kaleido.calc_fig_sync(fig, opts=opts)
