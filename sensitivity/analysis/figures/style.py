"""What every figure shares: one colour per framework, one line dash and marker symbol per regime (native
solid and round, canonical dashed and diamond), labels that carry n and, where a figure holds both regimes,
the regime; the mark of a framework default configuration (a black-edged star, one legend entry per figure).

Every figure uses plotly's "plotly_white" template, set here as plotly's default: a figure made with the
default takes it unvalidated, where naming it in each figure's layout validated a copy of it each time
(docs/performance.md)."""
from __future__ import annotations

try:
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.subplots import make_subplots
except ImportError:  # pragma: no cover - the extra is part of the modern environment
    raise ImportError("figures need plotly: pip install 'sensitivity[plots]'") from None

__all__ = ["go", "make_subplots", "colours", "framework_label", "series_name", "regime_title", "dash", "symbol",
           "add_default_marks", "finish"]

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")
DEFAULT_MARK = dict(symbol="star", size=11, color="rgba(255, 215, 0, 0.7)", line=dict(color="black", width=1))
DEFAULT_NAME = "framework default"
pio.templates.default = "plotly_white"


def colours(frameworks) -> dict:
    """The same colour for a framework in every figure of a report (by sorted name). `frameworks`: names, or
    a column of them (its distinct values taken at C speed, not as a Python set)."""
    names = frameworks.unique() if hasattr(frameworks, "unique") else frameworks
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(sorted(set(names)))}


DASHES = {"native": "solid", "canonical": "dash"}
SYMBOLS = {"native": "circle", "canonical": "diamond"}


def dash(regime: str) -> str:
    return DASHES.get(regime, "dot")


def symbol(regime: str) -> str:
    return SYMBOLS.get(regime, "square")


def series_name(framework: str, regime: str, regimes) -> str:
    """"torch" where the figure holds one regime (its title names it), "torch, canonical" where several."""
    return framework if len(regimes) < 2 else f"{framework}, {regime}"


def regime_title(title: str, regimes) -> str:
    """`title` with the regimes its figure draws: "... (regime: native)" or "(regimes: native, canonical)"."""
    regimes = list(regimes)
    if not regimes:
        return title
    return f"{title} ({'regime' if len(regimes) == 1 else 'regimes'}: {', '.join(regimes)})"


def framework_label(framework: str, n_trials: int, n_seeds: int, unit: str = "trials") -> str:
    n_seeds = int(n_seeds)
    return f"{framework} (n={int(n_trials)} {unit}, {n_seeds} seed{'' if n_seeds == 1 else 's'})"


def add_default_marks(fig, x, y, hover, row=None, col=None) -> None:
    """Stars on the framework default configurations; the legend names them once per figure."""
    if len(x) == 0:
        return
    shown = any(trace.name == DEFAULT_NAME and trace.showlegend is not False for trace in fig.data)
    trace = go.Scatter(x=list(x), y=list(y), mode="markers", marker=DEFAULT_MARK, name=DEFAULT_NAME,
                       legendgroup=DEFAULT_NAME, showlegend=not shown, hovertext=list(hover),
                       hoverinfo="text")
    if row is None:
        fig.add_trace(trace)
    else:
        fig.add_trace(trace, row=row, col=col)


def finish(fig, title: str, height: int = 500):
    fig.update_layout(title=title, height=height, legend=dict(groupclick="toggleitem"), hoverlabel=dict(namelength=-1))
    return fig
