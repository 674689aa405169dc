"""Sobol' and Morris sensitivity indices over a designed study, through SALib's public API (issue 30).

What each index measures, for an objective Y of parameters X1..Xk:
- S1, the first-order Sobol' index of Xi: the share of Var(Y) that Xi explains alone, Var(E[Y|Xi]) / Var(Y).
- ST, the total-order index: the share Xi explains with all its interactions, E[Var(Y|X~i)] / Var(Y); ST - S1
  is what Xi contributes only jointly with others.
- S2, the second-order index of a pair: the share the pair explains jointly beyond each one's S1.
- Morris mu*: the mean absolute elementary effect (the change of Y over a step of Xi, in the design's units,
  averaged over trajectories): a screening measure, cheap, that ranks roughly as ST does; sigma, the spread of
  the effects, is large where Xi acts nonlinearly or through interactions. A step that matches a period of Y
  hides an effect (on Ishigami, x2's sin^2 at 6+ levels), so mu* is a screen, not a variance share.

The design space: a float maps to [low, high], or [log low, log high] where log-scaled; an int to [low,
high + 1) (log: [log low, log(high + 1))), floored back; a categorical with k choices to [0, k), floored to
the choice's index. Parameters that share a `group` are one factor (SALib's `groups`): they move together in
the design and get one index. Designs are SALib's scrambled Sobol' sequence in Saltelli's layout (N(2D+2)
rows with second order, N(D+2) without, D factors; N a power of two) and Morris trajectories (r(D+1) rows).
A Saltelli design of base 2N from the same seed begins with the N design's rows, so a design grows in rounds.

Intervals are SALib's bootstrap over the design's base rows (Sobol') or elementary effects (Morris):
[est - conf, est + conf]. SALib draws them as if the base rows were independent; on its scrambled Sobol'
design the estimates are more precise than that, so the intervals cover conservatively, more so as N grows
(docs/experiments.md, "Sensitivity indices", has the coverage measured on Ishigami and Sobol's G-function).

Settled (`settled`): the top factor of a ranking (ST on a Saltelli design, mu* on a Morris one) leads in at
least LEAD_SHARE of bootstrap resamples, resampling the base rows (Sobol', SALib's own replicates) or the
trajectories (Morris), and its interval lies above the second's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, NamedTuple, Sequence

import numpy as np

KINDS = ("float", "int", "categorical")
RESAMPLES = 100  # SALib's default bootstrap resamples
CONF_LEVEL = 0.95
LEAD_SHARE = 0.90  # a settled ranking's top factor leads in at least this share of resamples
RANKING_RESAMPLES = 200  # resamples of the trajectories for a Morris ranking


@dataclass(frozen=True)
class Param:
    """One parameter of a design: kind float, int or categorical; low/high (and log, step) for numbers,
    choices for a categorical; `group` names a SALib group it belongs to (None: a factor of its own)."""
    name: str
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple = ()
    group: str | None = None

    def __post_init__(self):
        where = f"parameter {self.name!r}"
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind == "categorical":
            if len(self.choices) < 2:
                raise ValueError(f"{where}: choices needs at least 2 values, got {len(self.choices)}")
            return
        if self.low is None or self.high is None or not self.low < self.high:
            raise ValueError(f"{where}: needs low < high, got low={self.low} high={self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"{where}: log needs low > 0, got low={self.low}")
        if self.log and self.step not in (None, 1):
            raise ValueError(f"{where}: step and log cannot be combined")
        if self.step is not None and not self.step > 0:
            raise ValueError(f"{where}: step must be > 0, got {self.step}")

    @property
    def levels(self) -> int | None:
        """The number of values on a grid (categorical choices, or int/stepped levels), None if continuous."""
        if self.kind == "categorical":
            return len(self.choices)
        if self.log or (self.kind == "float" and self.step is None):
            return None
        return int(math.floor((self.high - self.low) / (self.step or 1) + 1e-9)) + 1

    @property
    def bounds(self) -> list:
        """The parameter's interval in the design space."""
        if self.levels is not None:
            return [0.0, float(self.levels)]
        high = self.high + 1 if self.kind == "int" else self.high
        return [math.log(self.low), math.log(high)] if self.log else [float(self.low), float(high)]

    def value_of(self, x: float):
        """The configuration value at design coordinate x (the inverse of the mapping above)."""
        if self.levels is not None:
            index = min(max(int(math.floor(x)), 0), self.levels - 1)
            if self.kind == "categorical":
                return self.choices[index]
            value = self.low + index * (self.step or 1)
            return int(value) if self.kind == "int" else float(value)
        value = math.exp(x) if self.log else float(x)
        if self.kind == "int":
            return int(min(max(math.floor(value), self.low), self.high))
        return min(max(value, self.low), self.high)

    def coordinate_of(self, value) -> float:
        """A design coordinate whose value is `value` (the middle of its cell on a grid)."""
        if self.kind == "categorical":
            return self.choices.index(value) + 0.5
        if self.levels is not None:
            return round((value - self.low) / (self.step or 1)) + 0.5
        if self.kind == "int":
            value = value + 0.5
        return math.log(value) if self.log else float(value)


def param_of(description) -> Param:
    """A Param from a Param, or a mapping with `name` and the fields of Param (`type` for `kind` accepted)."""
    if isinstance(description, Param):
        return description
    if not isinstance(description, Mapping) or "name" not in description:
        raise ValueError(f"a parameter description needs a name, got {description!r}")
    fields = dict(description)
    if "type" in fields:
        fields.setdefault("kind", fields.pop("type"))
    allowed = set(Param.__dataclass_fields__)
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ValueError(f"parameter {fields['name']!r}: unknown field {unknown[0]!r}; allowed: "
                         f"{', '.join(sorted(allowed))}")
    fields["choices"] = tuple(fields.get("choices", ()))
    return Param(**fields)


def params_of_distributions(distributions: Mapping) -> list:
    """Params from Optuna distributions by name (Float-, Int-, CategoricalDistribution; read by their fields)."""
    params = []
    for name, d in distributions.items():
        if hasattr(d, "choices"):
            params.append(Param(name, "categorical", choices=tuple(d.choices)))
        else:
            kind = "int" if type(d).__name__ == "IntDistribution" else "float"
            step = None if d.step is None or (kind == "int" and d.step == 1) else d.step
            params.append(Param(name, kind, d.low, d.high, log=d.log, step=step))
    return params


def problem_of(params: Sequence) -> dict:
    """SALib's problem for the parameters: names, bounds in the design space, and `groups` where any
    parameter names one (the others are groups of their own)."""
    params = [param_of(p) for p in params]
    names = [p.name for p in params]
    if not params:
        raise ValueError("a design needs at least 1 parameter")
    if len(set(names)) != len(names):
        raise ValueError(f"parameter names repeat: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    problem = {"num_vars": len(params), "names": names, "bounds": [p.bounds for p in params]}
    if any(p.group is not None for p in params):
        problem["groups"] = [p.group if p.group is not None else p.name for p in params]
    return problem


def factors_of(problem: dict) -> list:
    """The names an index is given to: the groups (in first-seen order) where the problem has them."""
    return list(dict.fromkeys(problem.get("groups") or problem["names"]))


def configuration_of(params: Sequence, row) -> dict:
    """The configuration {name: value} at one design row."""
    params = [param_of(p) for p in params]
    return {p.name: p.value_of(float(x)) for p, x in zip(params, row, strict=True)}


def configurations_of(params: Sequence, rows) -> list:
    """The configurations of every row of a design."""
    params = [param_of(p) for p in params]
    return [configuration_of(params, row) for row in np.asarray(rows)]


def row_of(params: Sequence, configuration: Mapping) -> np.ndarray:
    """A design row whose configuration is `configuration` (configuration_of's inverse)."""
    return np.array([param_of(p).coordinate_of(configuration[param_of(p).name]) for p in params])


def design_size(factors: int, n_base: int, second_order: bool = True) -> int:
    """Rows of a Saltelli design over `factors` factors: N(2D+2) with second order, N(D+2) without."""
    return n_base * (2 * factors + 2 if second_order else factors + 2)


def largest_base_within(budget: int, factors: int, second_order: bool = True) -> int:
    """The largest power-of-two base N whose complete Saltelli design fits in `budget` runs."""
    per_base = design_size(factors, 1, second_order)
    if budget < per_base:
        raise ValueError(f"a Saltelli design over {factors} factors needs at least {per_base} runs "
                         f"({'N(2D+2)' if second_order else 'N(D+2)'}, N=1); the budget is {budget}")
    return 1 << int(math.floor(math.log2(budget // per_base)))


def saltelli_design(problem: dict, n_base: int, second_order: bool = True, seed: int = 0) -> np.ndarray:
    """Saltelli's design on SALib's scrambled Sobol' sequence: one row per run, in the design space."""
    # lazy: SALib
    from SALib.sample import sobol as sobol_sample

    if n_base < 1 or n_base & (n_base - 1):
        raise ValueError(f"n_base must be a power of two (SALib's Sobol' sampler), got {n_base}")
    return sobol_sample.sample(problem, n_base, calc_second_order=second_order, scramble=True, seed=seed)


class Estimate(NamedTuple):
    """An index and its interval (SALib's bootstrap: estimate -/+ its conf)."""
    value: float
    low: float
    high: float


def _estimate(value, conf) -> Estimate:
    return Estimate(float(value), float(value - conf), float(value + conf))


class SobolIndices(NamedTuple):
    name: str
    first: Estimate  # S1: the share of the variance the factor explains alone
    total: Estimate  # ST: with all its interactions


class Ranking(NamedTuple):
    """Factors ranked by one index: their estimates and bootstrap replicates (resamples x factors)."""
    names: tuple
    estimates: tuple
    replicates: np.ndarray


@dataclass(frozen=True)
class SobolResult:
    parameters: tuple  # SobolIndices per factor, in the problem's order
    interactions: dict  # S2: {(a, b): Estimate} per pair of factors (empty without second order)
    n_base: int
    total_replicates: np.ndarray = field(repr=False)  # ST bootstrap replicates over base rows

    def ranking(self) -> Ranking:
        """The total-order ranking (issue 30: the ranking of a Saltelli design)."""
        return Ranking(tuple(p.name for p in self.parameters), tuple(p.total for p in self.parameters),
                       self.total_replicates)


def _objective(Y, rows: int, what: str) -> np.ndarray:
    Y = np.asarray(Y, dtype=float).ravel()
    if Y.size != rows:
        raise ValueError(f"{what} has {rows} runs but {Y.size} objective values")
    if not np.isfinite(Y).all():
        raise ValueError(f"the objective has {int((~np.isfinite(Y)).sum())} values that are not finite "
                         "(give a diverged run its chance-level score)")
    if np.ptp(Y) == 0:
        raise ValueError("the objective is constant over the design: no variance to attribute")
    return Y


def sobol_indices(problem: dict, Y, second_order: bool = True, num_resamples: int = RESAMPLES,
                  conf_level: float = CONF_LEVEL, seed: int = 0) -> SobolResult:
    """S1, ST (and S2 where `second_order`) with SALib's bootstrap intervals, from the objective values Y of
    a Saltelli design's rows in their order."""
    # lazy: SALib
    from SALib.analyze import sobol as sobol_analyze

    factors = factors_of(problem)
    per_base = design_size(len(factors), 1, second_order)
    Y = np.asarray(Y, dtype=float).ravel()
    if Y.size % per_base:
        raise ValueError(f"{Y.size} objective values is not a Saltelli design over {len(factors)} factors "
                         f"(a multiple of {per_base}{' with' if second_order else ' without'} second order)")
    Y = _objective(Y, Y.size, "the design")
    S = sobol_analyze.analyze(problem, Y, calc_second_order=second_order, num_resamples=num_resamples,
                              conf_level=conf_level, keep_resamples=True, seed=seed + 1)  # 0: no seed there
    parameters = tuple(SobolIndices(name, _estimate(S["S1"][j], S["S1_conf"][j]),
                                    _estimate(S["ST"][j], S["ST_conf"][j])) for j, name in enumerate(factors))
    interactions = {}
    if second_order:
        for j, a in enumerate(factors):
            for k in range(j + 1, len(factors)):
                interactions[(a, factors[k])] = _estimate(S["S2"][j, k], S["S2_conf"][j, k])
    return SobolResult(parameters, interactions, Y.size // per_base, np.asarray(S["ST_conf_all"]))


def morris_design(problem: dict, trajectories: int, levels: int = 4, seed: int = 0) -> np.ndarray:
    """Morris' trajectories on a grid of `levels` levels: trajectories x (factors + 1) rows."""
    # lazy: SALib
    from SALib.sample import morris as morris_sample

    if levels < 2 or levels % 2:
        raise ValueError(f"a Morris design needs an even number of levels, at least 2; got {levels}")
    if trajectories < 2:
        raise ValueError(f"a Morris design needs at least 2 trajectories, got {trajectories}")
    return morris_sample.sample(problem, trajectories, num_levels=levels, seed=seed)


class MorrisIndices(NamedTuple):
    name: str
    mu_star: Estimate  # the mean absolute elementary effect, SALib's bootstrap interval
    sigma: float  # the spread of the elementary effects: nonlinearity or interactions
    mu: float  # the mean signed effect


@dataclass(frozen=True)
class MorrisResult:
    parameters: tuple  # MorrisIndices per factor
    trajectories: int
    mu_star_replicates: np.ndarray = field(repr=False)  # mu* over resampled trajectories

    def ranking(self) -> Ranking:
        """The mu* ranking (issue 30: the ranking of a Morris design)."""
        return Ranking(tuple(p.name for p in self.parameters), tuple(p.mu_star for p in self.parameters),
                       self.mu_star_replicates)


def morris_indices(problem: dict, X, Y, levels: int = 4, num_resamples: int = RESAMPLES,
                   conf_level: float = CONF_LEVEL, seed: int = 0,
                   ranking_resamples: int = RANKING_RESAMPLES) -> MorrisResult:
    """mu*, its interval and sigma per factor from a Morris design X and its objective values Y; and mu*
    over `ranking_resamples` resamples of whole trajectories (for `settled`)."""
    # lazy: SALib
    from SALib.analyze import morris as morris_analyze

    factors = factors_of(problem)
    X = np.asarray(X, dtype=float)
    size = len(factors) + 1
    if X.ndim != 2 or len(X) % size or len(X) < 2 * size:
        raise ValueError(f"a Morris design over {len(factors)} factors has a multiple of {size} rows "
                         f"(at least 2 trajectories), got {len(X)}")
    Y = _objective(Y, len(X), "the design")

    def analyze(x, y, n, s):
        return morris_analyze.analyze(problem, x, y, num_resamples=n, conf_level=conf_level,
                                      num_levels=levels, seed=s)

    S = analyze(X, Y, num_resamples, seed)
    trajectories = len(X) // size
    rng = np.random.default_rng(seed)
    replicates = np.empty((ranking_resamples, len(factors)))
    for b in range(ranking_resamples):
        rows = (rng.integers(trajectories, size=trajectories)[:, None] * size + np.arange(size)).ravel()
        replicates[b] = analyze(X[rows], Y[rows], 2, seed + 1 + b)["mu_star"]
    parameters = tuple(MorrisIndices(name, _estimate(S["mu_star"][j], S["mu_star_conf"][j]),
                                     float(S["sigma"][j]), float(S["mu"][j])) for j, name in enumerate(factors))
    return MorrisResult(parameters, trajectories, replicates)


class Verdict(NamedTuple):
    settled: bool
    top: str
    second: str | None
    lead: float  # the share of resamples in which `top` ranks first
    separated: bool  # top's interval lies above the second's
    why: str


def settled(ranking, lead_share: float = LEAD_SHARE) -> Verdict:
    """Whether a ranking (a Ranking, or a result with `ranking()`) is settled: its top factor leads in at
    least `lead_share` of the bootstrap resamples and its interval lies above the second's; `why` says."""
    if hasattr(ranking, "ranking"):
        ranking = ranking.ranking()
    names, estimates = list(ranking.names), list(ranking.estimates)
    order = sorted(range(len(names)), key=lambda j: -estimates[j].value)
    top = order[0]
    if len(names) == 1:
        return Verdict(True, names[top], None, 1.0, True, f"{names[top]} is the only factor")
    second = order[1]
    replicates = np.asarray(ranking.replicates, dtype=float)
    lead = float(np.mean(np.argmax(replicates, axis=1) == top)) if len(replicates) else 0.0
    separated = estimates[top].low > estimates[second].high
    ok = lead >= lead_share and separated
    a, b = names[top], names[second]
    if ok:
        why = f"{a} leads in {lead:.0%} of resamples, and its interval lies above {b}'s"
    else:
        reasons = ([f"{a} leads in only {lead:.0%} of resamples (needs {lead_share:.0%})"] if lead < lead_share
                   else []) + ([f"{a}'s interval overlaps {b}'s"] if not separated else [])
        why = "; ".join(reasons)
    return Verdict(ok, a, b, lead, separated, why)
