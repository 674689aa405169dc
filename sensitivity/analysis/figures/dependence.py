"""Partial dependence with ICE curves, as DeepCAVE draws them: a surrogate (scikit-learn's ExtraTreesRegressor,
TREES trees) fitted to the trained trials of each regime, parameters on their axes (`tables.axes.trial_axes`: log10
on a log scale, a level's index for a category); for each parameter, the surrogate's prediction as that parameter
alone moves over GRID_POINTS values of the range the trials span (`_grid`: every level of a category, every value of
a discrete number) and the others keep a trial's values; each panel is ticked as parallel coordinates are
(`axes.ticks`: a log scale at powers of ten written as values). One thin line per trial (ICE: individual conditional
expectation) for at most ICE_CURVES trials, and their mean over at most AVERAGE_ROWS trials (the partial dependence)
as the thick line. The surrogate is fitted to at most FIT_MAX trials (a seeded sample) and to at most PARAMETERS_MAX
parameters (the first, the framework first); the title says what it rests on. A surrogate's curve is its guess
between the trials: where no trial lies, so does the curve."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from sensitivity.analysis.figures.layout import panel_grid
from sensitivity.analysis.figures.style import finish, go, regime_title
from sensitivity.analysis.table import PARAM, NotEnoughData, regimes_of, trials_table
from sensitivity.analysis.tables.axes import position, ticks, trial_axes
from sensitivity.studies.trial_rows import cached_beside

TITLE = "Partial dependence"  # the heading of its report section
ANY_STUDY = True  # drawn for a study another program wrote too: it needs no framework
TREES, GRID_POINTS, ICE_CURVES, AVERAGE_ROWS, FIT_MAX, PARAMETERS_MAX, MIN_TRIALS = 30, 20, 30, 300, 1_000, 8, 5
ALL = "all trials"
REGIME_COLOURS = ("#1f77b4", "#d62728", "#2ca02c")


class Info(NamedTuple):
    """Fields:
    - rows: one row per point of a curve: parameter, semantics (the regime whose surrogate drew it; none for a
      study without regimes, one surrogate of all its trials), curve (-1 for the partial dependence, the mean; else the trial's ICE curve),
      x (the parameter's position: log10 of its value on a log axis, a level's index on a category axis, else the
      value), y (the surrogate's predicted objective)
    - axes: one row per parameter drawn: parameter, axis (linear, log or category), levels (a category axis' labels,
      or a discrete number's values, joined by "|", else empty)
    - objective: what the surrogate predicts
    - fitted: one row per regime: semantics, trials (trained trials), fitted (the trials the surrogate was fitted
      to), curves (ICE curves drawn per parameter), averaged (trials the mean is over)
    """
    rows: pd.DataFrame
    axes: pd.DataFrame
    objective: str
    fitted: pd.DataFrame


def compute(table, parameters=None, curves: int = ICE_CURVES) -> Info:
    """The curves of each regime's surrogate (NotEnoughData where no regime has MIN_TRIALS). With the defaults, a
    study's curves are cached beside its table (`trial_rows.cached_beside`), as the importance is: a report of the
    study unchanged since fits no surrogate and imports no scikit-learn."""
    table = trials_table(table)
    if parameters is None and curves == ICE_CURVES:
        return cached_beside(table, "dependence", lambda: _curves(table, None, curves))
    return _curves(table, parameters, curves)


def _curves(table, parameters, curves: int) -> Info:
    # lazy: scikit-learn
    from sklearn.ensemble import ExtraTreesRegressor

    rows, axes, objective = trial_axes(table, parameters, "partial dependence")
    axes = axes[axes["parameter"].ne("semantics")].head(PARAMETERS_MAX).reset_index(drop=True)
    names = list(axes["parameter"])
    if not names:
        raise NotEnoughData("partial dependence needs a parameter that varies besides the regime")
    groups = [(r, rows[rows["semantics"].eq(r)]) for r in regimes_of(rows)] or [(None, rows)]
    parts, fitted = [], []
    for regime, group in groups:
        if len(group) < MIN_TRIALS:
            continue
        sample = group.sample(FIT_MAX, random_state=0) if len(group) > FIT_MAX else group
        X = np.nan_to_num(sample[[PARAM + n for n in names]].to_numpy(dtype=float), nan=-1.0)  # missing: its own cut
        model = ExtraTreesRegressor(n_estimators=TREES, min_samples_leaf=2, random_state=0, n_jobs=1).fit(
            X, sample["objective"].to_numpy(dtype=float))
        rng = np.random.default_rng(0)
        averaged = X[rng.choice(len(X), min(len(X), AVERAGE_ROWS), replace=False)]
        ice = averaged[:min(curves, len(averaged))]
        for j, (name, axis, levels) in enumerate(zip(names, axes["axis"], axes["levels"])):
            grid = _grid(axis, levels, X[:, j][X[:, j] != -1.0])
            predicted = _moved(model, averaged, j, grid)  # rows x grid
            # the average (curve -1), then each ICE curve, one frame for all of them
            parts.append(pd.DataFrame({"parameter": name, "semantics": regime,
                                       "curve": np.repeat(np.arange(-1, len(ice)), len(grid)),
                                       "x": np.tile(grid, len(ice) + 1),
                                       "y": np.concatenate([predicted.mean(axis=0), predicted[:len(ice)].ravel()])}))
        fitted.append({"semantics": regime, "trials": len(group), "fitted": len(sample), "curves": len(ice),
                       "averaged": len(averaged)})
    if not parts:
        raise NotEnoughData(f"partial dependence needs at least {MIN_TRIALS} trained trials in a regime")
    return Info(pd.concat(parts, ignore_index=True), axes, objective, pd.DataFrame(fitted))


def _grid(axis: str, levels: str, column: np.ndarray) -> np.ndarray:
    """Where a parameter's curves are read, on its axis: every level of a category; a discrete number's values
    (`axes.discrete_levels`: there is no batch size between 32 and 64) within the range its trials span; else
    GRID_POINTS values over that range."""
    if axis == "category":
        return np.arange(len(levels.split("|")), dtype=float)
    if not levels:
        return np.linspace(column.min(), column.max(), GRID_POINTS)
    places = position(pd.Series(levels.split("|")), axis)  # exact labels: the trials' own places
    return places[(places >= column.min()) & (places <= column.max())]


def _moved(model, rows: np.ndarray, j: int, grid: np.ndarray) -> np.ndarray:
    """The model's predictions for `rows` with column `j` set to each value of `grid`: rows x grid."""
    stacked = np.repeat(rows[None, :, :], len(grid), axis=0)
    stacked[:, :, j] = grid[:, None]
    return model.predict(stacked.reshape(-1, rows.shape[1])).reshape(len(grid), len(rows)).T


def plot(info: Info):
    rows, axes, fitted = info.rows, info.axes, info.fitted
    names = list(axes["parameter"])
    fig, positions, height = panel_grid(names)
    regimes = list(fitted["semantics"])
    for i, regime in enumerate(regimes):
        colour = REGIME_COLOURS[i % len(REGIME_COLOURS)]
        record = fitted.iloc[i]
        mine = rows["semantics"].isna() if regime is None or regime != regime else rows["semantics"].eq(regime)
        regime = regime if isinstance(regime, str) else ALL
        for name, axis, levels, (row, col) in zip(names, axes["axis"], axes["levels"], positions):
            part = rows[rows["parameter"].eq(name) & mine]
            ice = part[part["curve"].ge(0)]
            x_of = (lambda x: np.asarray(x, dtype=float))
            if len(ice):  # every ICE curve as one trace, broken between curves: one legend entry, light to draw
                breaks = ice.groupby("curve", sort=True)
                xs = np.concatenate([np.append(x_of(c["x"]), np.nan) for _, c in breaks])
                ys = np.concatenate([np.append(c["y"].to_numpy(dtype=float), np.nan) for _, c in breaks])
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=0.6),
                                         opacity=0.35, name=f"ICE, {regime} ({int(record['curves'])} trials)",
                                         legendgroup=f"ice {regime}", showlegend=(row, col) == (1, 1),
                                         hoverinfo="skip"), row=row, col=col)
            mean = part[part["curve"].eq(-1)]
            fig.add_trace(go.Scatter(x=x_of(mean["x"]), y=mean["y"].to_numpy(dtype=float), mode="lines+markers",
                                     line=dict(color=colour, width=3), name=f"partial dependence, {regime} (mean of "
                                     f"{int(record['averaged'])} trials)", legendgroup=f"pd {regime}",
                                     showlegend=(row, col) == (1, 1)), row=row, col=col)
    for name, axis, levels, (row, col) in zip(names, axes["axis"], axes["levels"], positions):
        fig.update_xaxes(title=f"{name} (log)" if axis == "log" else name, row=row, col=col,
                         **ticks(axis, levels, rows.loc[rows["parameter"].eq(name), "x"].to_numpy(dtype=float)))
        fig.update_yaxes(title=info.objective if col == 1 else None, row=row, col=col)
    rests = "; ".join((f"{r['semantics'] if isinstance(r['semantics'], str) else ALL}: " if len(fitted) > 1 else "")
                      + f"fitted to {int(r['fitted'])} of {int(r['trials'])} trials" for _, r in fitted.iterrows())
    # one regime: the title's "(regime: ...)" names it
    title = regime_title(f"Partial dependence and ICE curves of an ExtraTrees surrogate of {info.objective} "
                         f"({rests})", [r for r in regimes if isinstance(r, str)])
    return finish(fig, title, height)
