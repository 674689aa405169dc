"""Writing a figure: .html (self-contained: plotly.js inline, so it opens offline), or .png, .svg, .pdf
through kaleido 1.x and a Chromium (Debian's `chromium` package; kaleido finds it by itself); and writing the
data a figure is drawn from (`write_data`), as CSV or JSON, so that it can be drawn again elsewhere.

The first image starts kaleido's sync server, one browser kept for every later image in the process:
the first costs seconds, later ones a fraction of a second.
"""
from __future__ import annotations

import csv
import json
import math
import os
from pathlib import Path

from sensitivity.core.paths import check_output

FORMATS = ("html", "png", "svg", "pdf")
DATA_FORMATS = ("csv", "json")
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


def write_data(result, kind: str, out_path, fmt: str) -> list:
    """Write `result`, the NamedTuple a figure of `kind` is drawn from (`plots.figure_data`); returns the paths.

    JSON: one document, {"kind", "fields": {name: value}}, each table field as {"columns": [...], "rows":
    [{column: value}, ...]} (a missing value null). CSV: each table field in a file of its own, the first at
    `out_path` and each other beside it as STEM.FIELD.csv, and the other fields in STEM.fields.csv, one row per
    field with its value as JSON."""
    # lazy: pandas
    import pandas as pd

    if fmt not in DATA_FORMATS:
        raise ValueError(f"cannot write a figure's data as {fmt!r}; allowed: {', '.join(DATA_FORMATS)}")
    out = Path(out_path)
    tables = {name: value for name, value in result._asdict().items() if isinstance(value, pd.DataFrame)}
    others = {name: _plain(value) for name, value in result._asdict().items() if name not in tables}
    if fmt == "json":
        paths = {"": out}
    else:
        paths = {name: out if i == 0 else out.with_name(f"{out.stem}.{name}.csv") for i, name in enumerate(tables)}
        if others:
            paths["fields"] = out.with_name(f"{out.stem}.fields.csv")
    for path in paths.values():  # every file may be written before the first is
        check_output(path, "--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        fields = {name: ({"columns": [str(c) for c in value.columns], "rows": _records(value)}
                         if name in tables else others[name]) for name, value in result._asdict().items()}
        out.write_text(json.dumps({"kind": kind, "fields": fields}, indent=1, allow_nan=False) + "\n")
        return [out]
    for name, table in tables.items():
        table.to_csv(paths[name], index=False)
    if others:
        with paths["fields"].open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["field", "value"])
            writer.writerows((name, json.dumps(value, allow_nan=False)) for name, value in others.items())
    return list(paths.values())


def _records(table) -> list:
    """A table's rows as JSON-ready records, each value as `_plain` makes it (floats exact: repr round-trips)."""
    return [{str(column): _plain(value) for column, value in row.items()} for row in table.to_dict("records")]


def _plain(value):
    """`value` as JSON-ready Python: numpy scalars as numbers, a missing or infinite value as None, a time as ISO
    text, a tuple or an array as a list; anything else JSON cannot hold as its text."""
    # lazy: numpy, pandas
    import numpy as np
    import pandas as pd

    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, int, str)):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
