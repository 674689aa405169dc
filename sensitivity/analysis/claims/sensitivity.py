"""The Findings' sensitivity claims of a designed study (issue 30), from `designed.importance_record`.

Per framework, "which parameter matters most": settled where `indices.settled` says so (the top factor leads in at
least 90% of the bootstrap resamples and its interval lies above the second's); otherwise not settled, naming the
factors that lead together (intervals overlapping the top's), those below them, and, on a Saltelli design, how much
of the leaders' total index is interaction (ST - S1). An ST interval that holds the whole of an index's range [0, 1]
ranks nothing: the design is too small, and the claim says so.

Across frameworks, "frameworks differ in sensitivity": each difference of the ranking index (ST, or mu*) between
two frameworks, its interval widened to a Bonferroni family of all the differences (SALib's 95% half-widths are
1.96 standard errors); supported where one excludes 0, inconclusive where none does, not tested under two
frameworks with indices.

Each claim: {claim, subject, verdict, headline, details}; its line "  [verdict] claim: headline" is at most
`sentences.HEADLINE_LIMIT` characters, as every claim's.
"""
from __future__ import annotations

from sensitivity.analysis.claims.sentences import HEADLINE_LIMIT
from sensitivity.analysis.statistics import bonferroni_z, z_quantile

WHICH, DIFFER = "which parameter matters most", "frameworks differ in sensitivity"


class WhichParameter:
    """Claim "which parameter matters most", one verdict per framework of a designed study."""
    name = WHICH
    statement = "one parameter matters most"
    question = "which parameter matters most"
    would_test = "sensitivity sweep SPACE --design sobol (a designed study)"
    anchor = "importance"

    def verdicts(self, record: dict, size: str, grow: str) -> list:
        ranking = record["ranking"]
        return [_which(framework, r, ranking, size, grow) for framework, r in record["per_framework"].items()]


class FrameworksDiffer:
    """Claim "frameworks differ in sensitivity", one verdict over the frameworks of a designed study."""
    name = DIFFER
    statement = "frameworks differ in sensitivity"
    question = "whether frameworks differ in sensitivity"
    would_test = "sensitivity sweep SPACE --design sobol --frameworks A,B (a designed study of two frameworks)"
    anchor = "importance"

    def verdicts(self, record: dict, size: str, grow: str) -> list:
        return [_differ(record.get("differences", {}), record["ranking"]["index"], size, grow)]


DESIGN_CLAIMS = (WhichParameter(), FrameworksDiffer())  # in the order they print


def sensitivity_claims(name: str, record: dict) -> list:
    """The sensitivity claims of designed study `name` (`rankings.designed.importance_record`): each of
    DESIGN_CLAIMS' verdicts, one per framework, then whether frameworks differ."""
    design = record["design"]
    size = f"{record['ranking']['words']}, {design['points']} points a framework, {design['seeds']} seed(s) a point, " \
           f"study {name}"
    grow = (f"sensitivity sweep SPACE --design {design['kind']} --trials {design['points'] * design['seeds']} "
            f"--until-settled --max-trials {4 * design['points'] * design['seeds']} --study {name}")
    return [verdict for claim in DESIGN_CLAIMS for verdict in claim.verdicts(record, size, grow)]


def _claim(claim: str, subject: str, verdict: str, headline: str, details: str) -> dict:
    room = HEADLINE_LIMIT - len(f"  [{verdict}] {claim}: ")
    if len(headline) > room:
        headline = headline[:room - 1].rstrip() + "…"
    return {"claim": claim, "subject": subject, "verdict": verdict, "headline": headline, "details": details}


def _est(triple, digits: int = 2) -> str:
    est, low, high = triple
    return f"{est:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def ranks(r: dict, key: str) -> tuple:
    """(top, leaders, below) of one framework's record by index `key` (total or mu_star): the leaders are the
    parameters whose intervals overlap the top's, in order of estimate; the others lie below the top's."""
    params = {p: v[key] for p, v in r["parameters"].items()}
    order = sorted(params, key=lambda p: -params[p][0])
    top = r["top"] if r.get("top") in params else order[0]
    leaders = [p for p in order if p == top or params[p][2] >= params[top][1]]
    return top, leaders, [p for p in order if p not in leaders]


def mostly_interaction(r: dict, names) -> bool:
    """Whether each of `names` owes more of its ST to interactions (ST - S1) than to itself alone (S1)."""
    return all(r["parameters"][p]["total_minus_first"] > r["parameters"][p]["first"][0] for p in names)


def interaction_note(record: dict) -> str:
    """On a Saltelli design, where a framework's leaders are not separated: how much of their ST is interaction,
    which is why evaluators that weigh a joint effect differently can rank them apart ("" where none)."""
    if not record["ranking"]["interactions"]:
        return ""
    said = []
    for framework, r in record["per_framework"].items():
        if "parameters" not in r or r["settled"]:
            continue
        _, leaders, _ = ranks(r, "total")
        if len(leaders) < 2 or not mostly_interaction(r, leaders):
            continue
        shares = ", ".join(f"{p} {r['parameters'][p]['total_minus_first']:.2f}" for p in leaders)
        pairs = [f"{a}:{b} {_est(r['interactions'][f'{a}:{b}'])}" for i, a in enumerate(leaders)
                 for b in leaders[i + 1:] if f"{a}:{b}" in (r.get("interactions") or {})]
        said.append(f"{framework}, ST - S1 of {shares}" + (f" (S2 {'; '.join(pairs)})" if pairs else ""))
    if not said:
        return ""
    return ("The leading parameters act mostly through their interaction: " + "; ".join(said) + ". Which of them "
            "matters most then has no single answer: evaluators that weigh a joint effect differently (fANOVA's "
            "main effects, PED-ANOVA's top quantile, below) can rank them in opposite orders.")


def _which(framework: str, r: dict, ranking: dict, size: str, grow: str) -> dict:
    if "parameters" not in r:
        return _claim(WHICH, framework, "not tested", f"{framework}: no indices ({r['why']})",
                      f"{framework}: no indices: {r['why']}. Design: {size}.")
    label, key, interactions = ranking["index"], ranking["key"], ranking["interactions"]
    params = {p: v[key] for p, v in r["parameters"].items()}
    top, leaders, below = ranks(r, key)
    floor = min(params[p][1] for p in leaders)
    under = ", ".join(below) + (" below them" if all(params[p][2] < floor for p in below) else f" below {top}")
    listed = "; ".join(f"{p}: " + (f"S1 {_est(v['first'], 3)}, ST {_est(v['total'], 3)}" if interactions else
                                   f"mu* {_est(v['mu_star'], 3)}, sigma {v['sigma']:.3f}")
                       for p, v in r["parameters"].items())
    pairs = "; ".join(f"{pair} {_est(e, 3)}" for pair, e in (r.get("interactions") or {}).items())
    details = (f"{framework} ({size}; {r['n']} points with a value, {r['diverged']} diverged and "
               f"{r.get('collapsed', 0)} collapsed run(s), each counted at the chance-level accuracy it left): "
               f"{listed}" + (f"; second order S2: {pairs}" if pairs else "") + f". Ranking by {label}: "
               f"{r['why']}.")
    if interactions:
        details += (" Sobol' indices lie in [0, 1]; an estimate outside it is the design's sampling error, and ST - S1 "
                    "is the share of a parameter's effect that comes through its interactions.")
    small = "too small" in r["why"]  # designed._too_small: below a base the bootstrap has no spread to speak of
    wide = interactions and params[top][1] <= 0 and params[top][2] >= 1  # an index in [0, 1]: every value
    if r["settled"] and not wide:
        head = f"{framework}: {top} first, {label} {_est(params[top])}, leads in {r['lead']:.0%} of resamples"
        if below:
            head += f"; {', '.join(below)} below it"
        return _claim(WHICH, framework, "settled", head, details)
    if small:
        why = r["why"].removeprefix("not decided: ")
        head = f"{framework}: {top} ranks first, {label} {params[top][0]:.2f}; {why}"
    elif wide:
        head = (f"{framework}: {top} ranks first, {label} {_est(params[top])}: an interval holding the whole of "
                f"an index's range [0, 1] ranks nothing; the design is too small")
    else:
        head = (f"{framework}: " + " and ".join(f"{p} {label} {_est(params[p])}" for p in leaders)
                + f" lead, not separated ({top} first in {r['lead']:.0%} of resamples)")
        if below:
            head += f"; {under}"
        if interactions and len(leaders) > 1 and mostly_interaction(r, leaders):
            shares = ", ".join(f"{r['parameters'][p]['total_minus_first']:.2f}" for p in leaders)
            head += f"; ST-S1 {shares}: mostly interaction"
    return _claim(WHICH, framework, "not settled", head, details + f" A larger design may settle it: {grow}.")


def _differ(pairs: dict, label: str, size: str, grow: str) -> dict:
    if not pairs:
        return _claim(DIFFER, "", "not tested", "needs indices of two or more frameworks on one design",
                      f"Needs indices of two or more frameworks on one design ({size}).")
    found = [(pair, parameter, est, low, high) for pair, params in pairs.items()
             for parameter, (est, low, high) in params.items()]
    z, z95 = bonferroni_z(len(found)), float(z_quantile(0.975))
    widened = [(pair, p, est, est - (est - low) * z / z95, est + (high - est) * z / z95)
               for pair, p, est, low, high in found]
    differ = [f for f in widened if f[3] > 0 or f[4] < 0]

    def said(pair, parameter, est, low, high):
        a, b = pair.split("-", 1)
        who = a if low > 0 else b if high < 0 else None
        return ((f"{who} more sensitive to {parameter}: " if who else f"{parameter}: ")
                + f"{label} {a} minus {b} {est:+.2f} [{low:+.2f}, {high:+.2f}]")

    family = (f"{len(found)} differences of {label}, each est -/+ the root of the two 95% half-widths squared, "
              f"widened to a Bonferroni family of {len(found)} (z {z:.2f})")
    every = "; ".join(said(*f) for f in widened)
    if differ:
        head = f"{len(differ)} of {len(found)} differences exclude 0 (Bonferroni): " + "; ".join(
            said(*f) for f in differ)
        return _claim(DIFFER, "", "supported", head, f"{family}: {every}. Design: {size}.")
    narrowest = min(widened, key=lambda f: f[4] - f[3])
    head = f"none of {len(found)} differences of {label} excludes 0 (Bonferroni); narrowest: {said(*narrowest)}"
    return _claim(DIFFER, "", "inconclusive", head,
                  f"{family}: {every}. Design: {size}. A larger design narrows the intervals: {grow}.")
