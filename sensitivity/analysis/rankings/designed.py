"""Sobol' and Morris indices of a designed study (`sweep --design`), per framework (issue 30).

The study's user attribute `design` rebuilds the design's rows; each complete trial of a point (config_id
design:FRAMEWORK:ROW) gives the objective there, the mean over its seeds. A diverged run keeps the accuracy of
the model it left (chance level, as recorded; 1/classes where it recorded none) and is counted, as is a run that
collapsed (`table.collapsed_mask`), which keeps the chance-level accuracy it recorded. Indices need
every point of a framework's design: a framework with points missing or failed is reported, not estimated. The
design is one object (`Designed`, a subclass per kind) that samples, takes its values and analyses itself: Sobol'
S1/ST/S2 on a Saltelli design, Morris mu*/sigma on a Morris design, each with SALib's bootstrap intervals
(`rankings.indices`); a ranking is settled or not by `Ranking.verdict`, and never below MIN_BASE base rows
(MIN_TRAJECTORIES trajectories): a bootstrap over 1 or 2 rows has (nearly) no spread, and says so. Between two
frameworks, the difference of an index has the interval est +/- sqrt(conf_a^2 + conf_b^2), their designs trained
apart.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np
import pandas as pd

from sensitivity.analysis.rankings.base import Ranking, Verdict
from sensitivity.analysis.rankings.conditional import conditional_record
from sensitivity.analysis.rankings.framework_factor import framework_factor
from sensitivity.analysis.rankings.indices import Design as Sample
from sensitivity.analysis.rankings.indices import MorrisEvaluator, SobolEvaluator
from sensitivity.analysis.table import collapsed_mask
from sensitivity.config.design import DESIGN_ATTR, Design

MIN_BASE = 8  # below this Saltelli base, SALib's bootstrap resamples too few rows to be an interval
MIN_TRAJECTORIES = 4  # and below this many Morris trajectories


class Designed:
    """A designed study's design as one object: it samples (`rows`: SALib's design, the sweep's points), takes the
    values its trials reached (`values`) and analyses itself (`analyse`: its kind's evaluator and verdict). What
    depends on the kind (its index, its words, whether it has interactions) is an attribute of its subclass."""
    index: str  # the ranking index: "ST", "mu*"
    key: str  # the index's key in a record's parameters: "total", "mu_star"
    label: str  # the index as a table's heading names it
    title: str  # the kind as a figure's title names it
    article: str  # "A Saltelli (Sobol' indices)": the kind at the head of a sentence
    interactions: bool  # whether it gives second-order indices
    smallest: int  # the size below which its bootstrap is no interval

    def __init__(self, design: Design):
        self.design = design

    @staticmethod
    def of(design: Design) -> "Designed":
        return KINDS[design.kind](design)

    def rows(self) -> np.ndarray:
        return self.design.rows()

    def values(self, study, objective: Optional[str] = None) -> tuple:
        """(the objective's name, {framework: (values by row, NaN where missing; diverged runs; collapsed runs)})."""
        index, metric = objective_index(study, objective)
        return metric, point_values(study, self.design, index, metric)

    def evaluator(self):
        raise NotImplementedError

    def analyse(self, Y, seed: int = 0) -> tuple:
        """(Ranking, Verdict) of the objective values Y at the design's rows; ValueError for a constant one."""
        ranking = self.evaluator().evaluate(Sample(self.design.problem(), self.rows(), Y), seed=seed)
        verdict = ranking.verdict()
        if self.design.size < self.smallest:
            verdict = verdict._replace(settled=False, why=self.too_small())
        return ranking, verdict

    def words(self) -> str:
        """The design's size in words: "Saltelli base N=32"."""
        raise NotImplementedError

    def too_small(self) -> str:
        raise NotImplementedError

    def index_record(self) -> dict:
        """What a record of its indices says of its kind, for those who read the record (claims, report)."""
        return {"index": self.index, "key": self.key, "label": self.label, "title": self.title,
                "article": self.article, "interactions": self.interactions, "words": self.words()}


class Saltelli(Designed):
    index, key, label, title, article = "ST", "total", "ST (with interactions)", "Sobol'", "A Saltelli (Sobol' indices)"
    interactions, smallest = True, MIN_BASE

    def evaluator(self):
        return SobolEvaluator()

    def words(self) -> str:
        return f"Saltelli base N={self.design.size}"

    def too_small(self) -> str:
        return (f"not decided: a Saltelli base of N={self.design.size} is too small for a bootstrap interval (at "
                f"least {MIN_BASE}); the intervals shown are not estimates of the error")


class Morris(Designed):
    index, key, label, title, article = "mu*", "mu_star", "mu* (Morris)", "Morris", "A Morris"
    interactions, smallest = False, MIN_TRAJECTORIES

    def evaluator(self):
        return MorrisEvaluator(levels=self.design.levels)

    def words(self) -> str:
        return f"{self.design.size} Morris trajectories"

    def too_small(self) -> str:
        return (f"not decided: {self.design.size} Morris trajectories are too few for a bootstrap interval (at least "
                f"{MIN_TRAJECTORIES}); the intervals shown are not estimates of the error")


KINDS = {"sobol": Saltelli, "morris": Morris}  # config.design.DESIGNS


class NoDesign(ValueError):
    """The study has no design (or none that can be read): one line."""


class FrameworkIndices(NamedTuple):
    framework: str
    points: int  # the design's points
    complete: int  # points with a value
    diverged: int  # diverged runs counted at chance level
    collapsed: int  # runs that finished at chance (`table.collapsed_mask`), counted at the accuracy they recorded
    result: Optional[Ranking]  # None where points are missing
    verdict: Optional[Verdict]
    why_not: str  # why there is no result ("" where there is one)


class DesignedImportance(NamedTuple):
    design: Designed
    objective: str
    frameworks: tuple  # FrameworkIndices
    values: dict = {}  # {framework: (mean by row, diverged, collapsed, the seeds' variance by row)}


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
    """{framework: (values by row, NaN where missing; diverged runs; collapsed runs; the variance over its seeds by
    row, NaN under 2 seeds)} from the study's complete trials."""
    # lazy: optuna
    from optuna.trial import TrialState

    sums, squares, counts, diverged, chance = {}, {}, {}, {}, None
    finished = []  # (framework, final loss, accuracy) of the runs with status ok, for the collapse rule
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
        if t.user_attrs.get("status", "ok") == "ok":
            finished.append((framework, t.user_attrs.get("loss"),
                             t.user_attrs.get("accuracy", value if "accuracy" in metric else None)))
        sums.setdefault(framework, np.zeros(design.points))[row] += value
        squares.setdefault(framework, np.zeros(design.points))[row] += value * value
        counts.setdefault(framework, np.zeros(design.points))[row] += 1
    runs = pd.DataFrame(finished, columns=["framework", "loss", "accuracy"])
    runs["dataset"] = (study.user_attrs.get("space") or {}).get("dataset")
    collapsed = runs.loc[collapsed_mask(runs), "framework"].value_counts().to_dict() if len(runs) else {}
    out = {}
    for framework in sums:
        with np.errstate(invalid="ignore", divide="ignore"):
            n = counts[framework]
            mean = sums[framework] / n
            spread = np.where(n > 1, (squares[framework] - n * mean * mean) / (n - 1), np.nan)
            out[framework] = (mean, diverged.get(framework, 0), collapsed.get(framework, 0), np.maximum(spread, 0))
    return out


def designed_importance(study, objective: Optional[str] = None, seed: int = 0) -> DesignedImportance:
    """The design's indices per framework (NoDesign where the study has none)."""
    designed = Designed.of(design_of(study))
    design = designed.design
    metric, values = designed.values(study, objective)
    found = []
    frameworks = list(dict.fromkeys([*(study.user_attrs.get("space") or {}).get("frameworks", []), *values]))
    for framework in frameworks:
        Y, diverged, collapsed, _ = values.get(framework, (np.full(design.points, np.nan), 0, 0, None))
        complete = int(np.isfinite(Y).sum())
        result, verdict, why = None, None, ""
        if complete < design.points:
            why = (f"{design.points - complete} of its {design.points} design points have no complete value (not run "
                   "yet, running, or failed)")
        else:
            try:
                result, verdict = designed.analyse(Y, seed)
            except ValueError as exc:  # a constant objective: no variance to attribute
                why = str(exc)
        found.append(FrameworkIndices(framework, design.points, complete, diverged, collapsed, result, verdict, why))
    return DesignedImportance(designed, metric, tuple(found), values)


def _triple(e) -> list:
    return [round(e.value, 6), round(e.low, 6), round(e.high, 6)]


def framework_record(f: FrameworkIndices) -> dict:
    """The JSON of one framework: parameters {NAME: {first, total} or {mu_star, sigma}}, interactions, settled."""
    record = {"n": f.complete, "points": f.points, "diverged": f.diverged, "collapsed": f.collapsed}
    if f.result is None:
        return {**record, "settled": False, "why": f.why_not}
    ranking = f.result
    if "S1" in ranking.others:  # ST beside S1
        record["parameters"] = {name: {"first": _triple(first), "total": _triple(total),
                                       "total_minus_first": round(total.value - first.value, 6)}
                                for name, first, total in zip(ranking.names, ranking.others["S1"], ranking.estimates)}
        record["interactions"] = {f"{a}:{b}": _triple(e) for (a, b), e in ranking.interactions.items()}
    else:
        record["parameters"] = {name: {"mu_star": _triple(mu_star), "sigma": round(sigma, 6)}
                                for name, mu_star, sigma in zip(ranking.names, ranking.estimates,
                                                                ranking.others["sigma"])}
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
            ra, rb = a.result, b.result
            pair = {}
            for name, ea, eb in zip(ra.names, ra.estimates, rb.estimates):
                half = math.hypot((ea.high - ea.low) / 2, (eb.high - eb.low) / 2)
                est = ea.value - eb.value
                pair[name] = [round(est, 6), round(est - half, 6), round(est + half, 6)]
            out[f"{a.framework}-{b.framework}"] = pair
    return out


def importance_record(found: DesignedImportance) -> dict:
    """The JSON of `sensitivity importance --json` on a designed study (issue 30's shape; the top-level
    parameters are the framework's where the study has one; per framework, `within`: the indices within each
    optimizer, `rankings.conditional`, where the design has an optimizer and an lr)."""
    per = {f.framework: framework_record(f) for f in found.frameworks}
    for f in found.frameworks:
        if f.result is not None and f.framework in found.values:
            Y, _, _, spread = found.values[f.framework]
            within = conditional_record(Y, spread, found.design.design)
            if within is not None:
                per[f.framework]["within"] = within
    record = {"design": found.design.design.attrs(), "ranking": found.design.index_record(),
              "objective": found.objective, "per_framework": per,
              "n": sum(f.complete for f in found.frameworks),
              "settled": bool(per) and all(r["settled"] for r in per.values())}
    if len(per) == 1:
        only = next(iter(per.values()))
        record.update({k: only[k] for k in ("parameters", "interactions") if k in only})
    if len(per) > 1:
        record["differences"] = differences(found)
        record["framework_factor"] = framework_factor(found.values, found.design.design)
    return record
