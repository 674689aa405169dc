"""Sobol' and Morris indices of a designed study (`sweep --design`), per framework (issue 30).

The study's user attribute `design` rebuilds the design's rows; each complete trial of a point (config_id
design:FRAMEWORK:ROW) gives the objective there, the mean over its seeds. A diverged run keeps the accuracy of
the model it left (chance level, as recorded; 1/classes where it recorded none) and is counted. Indices need
every point of a framework's design: a framework with points missing or failed is reported, not estimated. Sobol'
S1/ST/S2 on a Saltelli design, Morris mu*/sigma on a Morris design, each with SALib's bootstrap intervals
(`analysis.indices`); a ranking is settled or not by `indices.settled`, and never below MIN_BASE base rows
(MIN_TRAJECTORIES trajectories): a bootstrap over 1 or 2 rows has (nearly) no spread, and says so. Between two
frameworks, the difference of an index has the interval est +/- sqrt(conf_a^2 + conf_b^2), their designs trained
apart.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from sensitivity.analysis.rankings import indices
from sensitivity.config.design import DESIGN_ATTR, Design


MIN_BASE = 8  # below this Saltelli base, SALib's bootstrap resamples too few rows to be an interval
MIN_TRAJECTORIES = 4  # and below this many Morris trajectories


class NoDesign(ValueError):
    """The study has no design (or none that can be read): one line."""


class FrameworkIndices(NamedTuple):
    framework: str
    points: int  # the design's points
    complete: int  # points with a value
    diverged: int  # diverged runs counted at chance level
    result: object  # indices.SobolResult or MorrisResult; None where points are missing
    verdict: Optional[indices.Verdict]
    why_not: str  # why there is no result ("" where there is one)


class DesignedImportance(NamedTuple):
    design: Design
    objective: str
    frameworks: tuple  # FrameworkIndices


def design_of(study) -> Design:
    attrs = study.user_attrs.get(DESIGN_ATTR)
    if attrs is None:
        raise NoDesign(f"study {study.study_name} has no design (it was not run with sweep --design)")
    try:
        return Design.from_attrs(attrs)
    except (KeyError, TypeError, ValueError) as exc:
        raise NoDesign(f"study {study.study_name}: its design attribute cannot be read ({exc})") from None


def objective_index(study, objective: Optional[str]) -> tuple:
    """(index, name) of the objective analysed: `objective`, else the study's first."""
    names = list(study.metric_names or [f"values[{i}]" for i in range(len(study.directions))])
    if objective is None:
        return 0, names[0]
    if objective not in names:
        raise ValueError(f"--objective {objective!r}: not an objective of study {study.study_name}; allowed: "
                         f"{', '.join(names)}")
    return names.index(objective), objective


def _chance(study) -> Optional[float]:
    dataset = (study.user_attrs.get("space") or {}).get("dataset")
    try:
        from sensitivity import datasets  # lazy: the registry, only where a diverged run recorded no value
        return 1.0 / datasets.REGISTRY[dataset].classes
    except (KeyError, AttributeError, TypeError, ZeroDivisionError):
        return None


def point_values(study, design: Design, index: int, metric: str) -> dict:
    """{framework: (values by row, NaN where missing; diverged runs)} from the study's complete trials."""
    # lazy: optuna
    from optuna.trial import TrialState

    sums, counts, diverged, chance = {}, {}, {}, None
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        config = str(t.user_attrs.get("config_id", ""))
        parts = config.split(":")
        if len(parts) != 3 or parts[0] != "design" or not parts[2].isdigit():
            continue
        framework, row = parts[1], int(parts[2])
        if row >= design.points:
            continue
        value = t.values[index] if t.values and len(t.values) > index else None
        if t.user_attrs.get("status") == "diverged":
            diverged[framework] = diverged.get(framework, 0) + 1
            if value is None or not math.isfinite(value):
                chance = chance if chance is not None else _chance(study)
                value = chance if "accuracy" in metric else None
        if value is None or not math.isfinite(value):
            continue
        sums.setdefault(framework, np.zeros(design.points))[row] += value
        counts.setdefault(framework, np.zeros(design.points))[row] += 1
    out = {}
    for framework in sums:
        with np.errstate(invalid="ignore", divide="ignore"):
            out[framework] = (sums[framework] / counts[framework], diverged.get(framework, 0))
    return out


def designed_importance(study, objective: Optional[str] = None, seed: int = 0) -> DesignedImportance:
    """The design's indices per framework (NoDesign where the study has none)."""
    design = design_of(study)
    index, metric = objective_index(study, objective)
    values = point_values(study, design, index, metric)
    problem, rows = design.problem(), design.rows()
    found = []
    frameworks = list(dict.fromkeys([*(study.user_attrs.get("space") or {}).get("frameworks", []), *values]))
    for framework in frameworks:
        Y, diverged = values.get(framework, (np.full(design.points, np.nan), 0))
        complete = int(np.isfinite(Y).sum())
        result, verdict, why = None, None, ""
        if complete < design.points:
            why = (f"{design.points - complete} of its {design.points} design points have no complete value (not run "
                   "yet, running, or failed)")
        else:
            try:
                result = (indices.sobol_indices(problem, Y, seed=seed) if design.kind == "sobol" else
                          indices.morris_indices(problem, rows, Y, levels=design.levels, seed=seed))
                verdict = indices.settled(result)
                small = design.size < (MIN_BASE if design.kind == "sobol" else MIN_TRAJECTORIES)
                if small:
                    verdict = verdict._replace(settled=False, why=_too_small(design))
            except ValueError as exc:  # a constant objective: no variance to attribute
                why = str(exc)
        found.append(FrameworkIndices(framework, design.points, complete, diverged, result, verdict, why))
    return DesignedImportance(design, metric, tuple(found))


def _too_small(design: Design) -> str:
    if design.kind == "sobol":
        return (f"not decided: a Saltelli base of N={design.size} is too small for a bootstrap interval (at least "
                f"{MIN_BASE}); the intervals shown are not estimates of the error")
    return (f"not decided: {design.size} Morris trajectories are too few for a bootstrap interval (at least "
            f"{MIN_TRAJECTORIES}); the intervals shown are not estimates of the error")


def _triple(e) -> list:
    return [round(e.value, 6), round(e.low, 6), round(e.high, 6)]


def framework_record(f: FrameworkIndices) -> dict:
    """The JSON of one framework: parameters {NAME: {first, total} or {mu_star, sigma}}, interactions, settled."""
    record = {"n": f.complete, "points": f.points, "diverged": f.diverged}
    if f.result is None:
        return {**record, "settled": False, "why": f.why_not}
    if isinstance(f.result, indices.SobolResult):
        record["parameters"] = {p.name: {"first": _triple(p.first), "total": _triple(p.total),
                                         "total_minus_first": round(p.total.value - p.first.value, 6)}
                                for p in f.result.parameters}
        record["interactions"] = {f"{a}:{b}": _triple(e) for (a, b), e in f.result.interactions.items()}
    else:
        record["parameters"] = {p.name: {"mu_star": _triple(p.mu_star), "sigma": round(p.sigma, 6)}
                                for p in f.result.parameters}
    v = f.verdict
    return {**record, "settled": v.settled, "top": v.top, "why": v.why, "lead": round(v.lead, 3)}


def difference_verdict(a: str, b: str, low: float, high: float) -> str:
    """The sentence of an index's difference A - B with interval [low, high]: which framework is more sensitive to
    the parameter, or not decided where the interval holds 0."""
    return f"{a} more sensitive" if low > 0 else f"{b} more sensitive" if high < 0 else "not decided"


def differences(found: DesignedImportance) -> dict:
    """{"A-B": {parameter: [est, low, high]}} of the ranking index (ST, or mu*) between each two frameworks
    with results: est -/+ sqrt(conf_a^2 + conf_b^2)."""
    done = [f for f in found.frameworks if f.result is not None]
    out = {}
    for i, a in enumerate(done):
        for b in done[i + 1:]:
            ra, rb = a.result.ranking(), b.result.ranking()
            pair = {}
            for name, ea, eb in zip(ra.names, ra.estimates, rb.estimates):
                half = math.hypot((ea.high - ea.low) / 2, (eb.high - eb.low) / 2)
                est = ea.value - eb.value
                pair[name] = [round(est, 6), round(est - half, 6), round(est + half, 6)]
            out[f"{a.framework}-{b.framework}"] = pair
    return out


def importance_record(found: DesignedImportance) -> dict:
    """The JSON of `sensitivity importance --json` on a designed study (issue 30's shape; the top-level
    parameters are the framework's where the study has one)."""
    per = {f.framework: framework_record(f) for f in found.frameworks}
    record = {"design": found.design.attrs(), "objective": found.objective, "per_framework": per,
              "n": sum(f.complete for f in found.frameworks),
              "settled": bool(per) and all(r["settled"] for r in per.values())}
    if len(per) == 1:
        only = next(iter(per.values()))
        record.update({k: only[k] for k in ("parameters", "interactions") if k in only})
    if len(per) > 1:
        record["differences"] = differences(found)
    return record
