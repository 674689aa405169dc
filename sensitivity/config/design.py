"""The design space of a designed sensitivity study (issue 30): parameters mapped onto SALib's unit
factors, and SALib's designs over them (Saltelli's for Sobol' indices, Morris' trajectories).

The design space: a float maps to [low, high], or [log low, log high] where log-scaled; an int to [low,
high + 1) (log: [log low, log(high + 1))), floored back; a categorical with k choices to [0, k), floored to
the choice's index. Parameters that share a `group` are one factor (SALib's `groups`): they move together in
the design and get one index. Designs are SALib's scrambled Sobol' sequence in Saltelli's layout (N(2D+2)
rows with second order, N(D+2) without, D factors; N a power of two) and Morris trajectories (r(D+1) rows).
A Saltelli design of base 2N from the same seed begins with the N design's rows, so a design grows in rounds.
Here, below the sweep and the analysis, so that both read the same mapping.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

KINDS = ("float", "int", "categorical")

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


def morris_design(problem: dict, trajectories: int, levels: int = 4, seed: int = 0) -> np.ndarray:
    """Morris' trajectories on a grid of `levels` levels: trajectories x (factors + 1) rows."""
    # lazy: SALib
    from SALib.sample import morris as morris_sample

    if levels < 2 or levels % 2:
        raise ValueError(f"a Morris design needs an even number of levels, at least 2; got {levels}")
    if trajectories < 2:
        raise ValueError(f"a Morris design needs at least 2 trajectories, got {trajectories}")
    return morris_sample.sample(problem, trajectories, num_levels=levels, seed=seed)


DESIGNS = ("sobol", "morris")
MORRIS_LEVELS = 4
DESIGN_ATTR = "design"  # the study's user attribute that holds a designed sweep's Design (Design.attrs)


def params_of_space(space) -> list:
    """The design's Params of a Space's parameters (its framework is not a factor: each framework gets its own
    design); a categorical of one choice is constant and left out."""
    params = []
    for name, p in space.parameters.items():
        if p.type == "categorical":
            if len(p.choices) > 1:
                params.append(Param(name, "categorical", choices=tuple(p.choices)))
        else:
            step = None if p.step is None or (p.type == "int" and p.step == 1) else p.step
            params.append(Param(name, p.type, p.low, p.high, log=p.log, step=step))
    return params


@dataclass(frozen=True)
class Design:
    """A designed study's design, the same for every framework: `kind` sobol (Saltelli, base `size`, second
    order) or morris (`size` trajectories on `levels` levels), SALib's `seed`, `seeds` training seeds a point."""
    kind: str
    size: int
    seed: int
    params: tuple
    seeds: int = 1
    levels: int = MORRIS_LEVELS

    def problem(self) -> dict:
        return problem_of(self.params)

    @property
    def factors(self) -> int:
        return len(factors_of(self.problem()))

    def rows(self) -> np.ndarray:
        """The design's rows in SALib's order (the analysis reads the objective in this order)."""
        if self.kind == "sobol":
            return saltelli_design(self.problem(), self.size, True, self.seed)
        return morris_design(self.problem(), self.size, self.levels, self.seed)

    @property
    def points(self) -> int:
        if self.kind == "sobol":
            return design_size(self.factors, self.size, True)
        return self.size * (self.factors + 1)

    def describe(self) -> str:
        what = (f"Saltelli (Sobol' indices, second order) base N={self.size}: N(2D+2) = {self.points} points"
                if self.kind == "sobol" else
                f"Morris, r={self.size} trajectories on {self.levels} levels: r(D+1) = {self.points} points")
        return (f"{what} over D={self.factors} factors ({', '.join(factors_of(self.problem()))}), SALib seed "
                f"{self.seed}, {self.seeds} seed(s) a point")

    def attrs(self) -> dict:
        """JSON for the study's user attributes: enough to rebuild exactly these rows."""
        params = [{k: (list(v) if k == "choices" else v) for k, v in vars(p).items()} for p in self.params]
        return {"kind": self.kind, "size": self.size, "seed": self.seed, "seeds": self.seeds,
                "levels": self.levels, "params": params, "points": self.points}

    @classmethod
    def from_attrs(cls, attrs: Mapping) -> "Design":
        return cls(attrs["kind"], int(attrs["size"]), int(attrs["seed"]),
                   tuple(param_of(p) for p in attrs["params"]), int(attrs.get("seeds", 1)),
                   int(attrs.get("levels", MORRIS_LEVELS)))


def design_within(kind: str, params: Sequence, budget: int, seed: int = 0, seeds: int = 1,
                  levels: int = MORRIS_LEVELS) -> Design:
    """The largest complete design of `kind` whose points x seeds fit in `budget` runs (per framework): a
    power-of-two Saltelli base, or a whole number of Morris trajectories (at least 2). ValueError (a
    sentence) where even the smallest does not fit."""
    if kind not in DESIGNS:
        raise ValueError(f"unknown design {kind!r}; allowed: {', '.join(DESIGNS)}")
    params = tuple(param_of(p) for p in params)
    if not params:
        raise ValueError("the space has no parameter with two or more values: nothing to design over")
    factors = len(factors_of(problem_of(params)))
    points = budget // seeds
    if kind == "sobol":
        if points < design_size(factors, 1):
            raise ValueError(f"{budget} runs cannot hold one base sample of a Saltelli design over {factors} factors:"
                             f" it needs N(2D+2) = {design_size(factors, 1)} points x {seeds} seed(s) at N=1")
        return Design(kind, largest_base_within(points, factors), seed, params, seeds, levels)
    if levels < 2 or levels % 2:
        raise ValueError(f"a Morris design needs an even number of levels, at least 2; got {levels}")
    if points < 2 * (factors + 1):
        raise ValueError(f"{budget} runs cannot hold a Morris design over {factors} factors: it needs 2 trajectories "
                         f"of D+1 = {factors + 1} points x {seeds} seed(s), {2 * (factors + 1) * seeds} runs")
    return Design(kind, points // (factors + 1), seed, params, seeds, levels)
