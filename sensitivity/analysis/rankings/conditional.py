"""Indices within each optimizer, and the closed index of {optimizer, lr}, from a Saltelli design (issue 41).

Where lr's effect turns with the optimizer, "which parameter matters" over the whole space is decided by their
interaction; within one optimizer it is well posed. Saltelli's design (SALib, second order) holds, per base row,
A, AB_j (A with column j from B), BA_j (B with column j from A) and B: each row takes a set of its columns from B
(with three factors, every set), so pairs of rows that share exactly the factors wanted exist without any further
run. Within an optimizer o, for each other factor i:
- ST(i | o) = E[(f(x) - f(x'))^2] / 2 / V_o over the pairs that differ only in x_i (A and AB_i, BA_i and B, ...),
  both rows at o (Jansen);
- S1(i | o) = 1 - E[(f(x) - f(x'))^2] / 2 / V_o over the pairs that share only the optimizer and x_i (AB_i and
  BA_optimizer, ...), both at o;
with V_o = E[(f(x) - f(x'))^2] / 2 over the pairs that share only the optimizer (A and BA_optimizer, ...), both at
o: the variance at o from the same base rows as the numerators, so that the two err together (the variance of all
the rows at o instead gave ST(lr | sgd) an sd of 0.30 over 200 planted worlds at base 16, and 0.010 this way). The
closed index of the group {optimizer, lr}, the share of the variance the two explain together with their
interaction, is 1 - E[(f(x) - f(x'))^2] / 2 / V over the pairs that share only the two (AB_lr and BA_optimizer,
...), V from the pairs that share nothing (A and B, AB_j and BA_j), over the whole design.
Each value is a mean over k seeds, whose noise sigma^2 / k (from the seeds of each point) enters every squared
difference; with 2 or more seeds a point it is subtracted, else the record says so.
Intervals: the percentile bootstrap over base rows (each with all its rows); a ranking within an optimizer is
settled by `base.settled` on ST.
"""
from __future__ import annotations

import numpy as np

from sensitivity.analysis.rankings.base import Estimate, Ranking, settled

GIVEN = "optimizer"  # the categorical factor the indices are taken within
PARTNERS = ("lr_decades", "lr")  # the factor that forms the group with it: the first the design has
RESAMPLES = 1000
VARIANCE = "variance"  # the key of the pairs that give a part's variance (see the module)
HOW = ("within an optimizer o, over the pairs of the design's rows at o: ST(i | o) = E[(f(x) - f(x'))^2] / 2 / V_o "
       "over the pairs that differ only in i (A and AB_i, ...), S1(i | o) = 1 - E[(f(x) - f(x'))^2] / 2 / V_o over "
       "the pairs that share only the optimizer and i (AB_i and BA_optimizer, ...), V_o = E[(f(x) - f(x'))^2] / 2 "
       "over the pairs that share only the optimizer; the group's closed index S1({optimizer, lr}) = 1 - E[(f(x) - "
       "f(x'))^2] / 2 / V over the pairs that share only the two, V over the pairs that share nothing; the seeds' "
       "noise subtracted from each squared difference; 95% bootstrap over base rows")


def applies(design) -> tuple:
    """(given index, partner index) where the design is a Saltelli design with second order over an optimizer,
    an lr and at least one more factor (within an optimizer, two to rank), without groups; else ()."""
    names = [p.name for p in design.params]
    partner = next((n for n in PARTNERS if n in names), None)
    if (design.kind != "sobol" or GIVEN not in names or partner is None or len(names) < 3
            or any(p.group for p in design.params)
            or design.params[names.index(GIVEN)].kind != "categorical"
            or design.points != design.size * (2 * len(names) + 2)):
        return ()
    return names.index(GIVEN), names.index(partner)


def _masks(D: int) -> list:
    """Each row of a base row, in SALib's order (A, AB_j, BA_j, B), as the set of columns it takes from B."""
    full = (1 << D) - 1
    return [0] + [1 << j for j in range(D)] + [full ^ (1 << j) for j in range(D)] + [full]


def _pairs(masks: list, differ: int) -> list:
    """The (row, row) pairs of a base row whose columns differ exactly in the set `differ` (each set of columns
    once: with 3 factors, every subset is a row and each set has several pairs)."""
    first = {}
    for r, m in enumerate(masks):
        first.setdefault(m, r)
    rows = sorted(first.values())
    return [(a, b) for i, a in enumerate(rows) for b in rows[i + 1:] if masks[a] ^ masks[b] == differ]


def _halves(Y, noise, pairs) -> np.ndarray:
    """(f(a) - f(b))^2 / 2 less its noise, per base row and pair: base rows x pairs."""
    return np.stack([(Y[:, a] - Y[:, b]) ** 2 / 2 - (noise[:, a] + noise[:, b]) / 2 for a, b in pairs], 1)


def _sums(halves, at) -> tuple:
    """Per base row: the sum of `halves` over the pairs where `at` holds, and their count."""
    return np.where(at, halves, 0).sum(1), at.sum(1)


def _ratio(w, sums) -> np.ndarray:
    """The weighted mean of per-base-row sums: (w @ sum) / (w @ count)."""
    return (w @ sums[0]) / (w @ sums[1])


def _statistics(w, parts: dict) -> dict:
    """Every index for base-row weights w (resamples x base rows): {key: {name: values over resamples}}, each
    half squared difference over the variance its part's independent pairs give (`VARIANCE`)."""
    out = {}
    for key, halves in parts.items():
        variance = _ratio(w, halves[VARIANCE])
        out[key] = {name: _ratio(w, h) / variance for name, h in halves.items() if name != VARIANCE}
    return out


def conditional_record(Y, spread, design, resamples: int = RESAMPLES, seed: int = 0):
    """{"given", "group", "how", "seeds", "noise_subtracted", "closed": [est, low, high], "levels": {level:
    {"pairs", "parameters": {name: {"first", "total"}}, "settled", "top", "lead", "why"}}} of one framework's values
    Y by design row (the mean over its seeds) and the seeds' variance by row; None where the design does not
    apply (`applies`) or a row has no value."""
    where = applies(design)
    Y = np.asarray(Y, dtype=float)
    if not where or not np.isfinite(Y).all():
        return None
    g, partner = where
    names = [p.name for p in design.params]
    D, N = len(names), design.size
    full, masks = (1 << D) - 1, _masks(D)
    seeds = int(design.seeds)
    subtract = seeds > 1 and spread is not None and np.isfinite(spread).all()
    noise = (np.asarray(spread, dtype=float) / seeds if subtract else np.zeros_like(Y)).reshape(N, len(masks))
    Y = Y.reshape(N, len(masks))
    choices = design.params[g].choices
    levels = np.array([choices.index(design.params[g].value_of(x)) for x in design.rows()[:, g]]).reshape(Y.shape)
    others = [i for i in range(D) if i != g]

    def halves(differ: int, at=None) -> tuple:
        """The sums per base row of the half squared differences of the pairs differing in `differ`, at optimizer
        level `at` (every pair where None)."""
        pairs = _pairs(masks, differ)
        chosen = np.ones((N, len(pairs)), bool) if at is None else levels[:, [a for a, _ in pairs]] == at
        return _sums(_halves(Y, noise, pairs), chosen)

    parts = {"all": {"closed": halves(full ^ (1 << g) ^ (1 << partner)), VARIANCE: halves(full)}}
    for o in range(len(choices)):
        parts[o] = {VARIANCE: halves(full ^ (1 << g), o)}
        for i in others:
            parts[o][("total", i)] = halves(1 << i, o)
            parts[o][("first", i)] = halves(full ^ (1 << g) ^ (1 << i), o)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = _statistics(np.ones((1, N)), parts)
        draws = np.random.default_rng(seed).integers(0, N, (resamples, N))
        boot = _statistics(np.stack([np.bincount(d, minlength=N) for d in draws]).astype(float), parts)

    def triple(key, name, first: bool = False) -> list:
        est, column = point[key][name][0], boot[key][name]
        if first:
            est, column = 1 - est, 1 - column
        low, high = np.nanpercentile(column, [2.5, 97.5]) if np.isfinite(column).any() else (np.nan, np.nan)
        return [round(float(est), 6), round(float(low), 6), round(float(high), 6)]

    record = {"given": names[g], "group": [names[g], names[partner]], "how": HOW, "seeds": seeds,
              "noise_subtracted": bool(subtract), "closed": triple("all", "closed", first=True), "levels": {}}
    for o, level in enumerate(choices):
        samples = int(parts[o][VARIANCE][1].sum())  # the pairs at this optimizer that give its variance
        st = [point[o][("total", i)][0] for i in others]
        if samples < 4 or not np.isfinite(st).all():
            record["levels"][str(level)] = {"pairs": samples, "settled": False,
                                            "why": f"{samples} pair(s) of design rows at this optimizer: too few"}
            continue
        params = {names[i]: {"first": triple(o, ("first", i), first=True), "total": triple(o, ("total", i))}
                  for i in others}
        replicates = np.stack([boot[o][("total", i)] for i in others], 1)
        ranking = Ranking(tuple(names[i] for i in others), tuple(Estimate(*params[names[i]]["total"]) for i in others),
                          np.nan_to_num(replicates, nan=-np.inf), "ST")
        verdict = settled(ranking)
        record["levels"][str(level)] = {"pairs": samples, "parameters": params, "settled": verdict.settled,
                                        "top": verdict.top, "lead": round(verdict.lead, 3), "why": verdict.why}
    return record
