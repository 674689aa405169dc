"""The Findings' sensitivity claims of a designed study (issue 30), from `designed.importance_record`.

Per framework, "which parameter matters most": settled where `indices.settled` says so (the top factor leads in at
least 90% of the bootstrap resamples and its interval lies above the second's); otherwise not settled, naming the
factors that lead together (intervals overlapping the top's), those below them, and, on a Saltelli design, how much
of the leaders' total index is interaction (ST - S1). An ST interval that holds the whole of an index's range [0, 1]
ranks nothing: the design is too small, and the claim says so.

Per framework, on a design over an optimizer and an lr, "which parameter matters within an optimizer" (from the
design's pick-freeze pairs that share the optimizer, `rankings.conditional`): settled where the ranking by ST is
settled within every optimizer, else not settled, naming where it is and where not; beside it, the closed index of
{optimizer, lr}, the share the two explain together.

Across frameworks, "frameworks differ in sensitivity", with the framework as a factor of the design
(`rankings.framework_factor`): what the framework moves through the other factors, ST(framework) - S1(framework),
less the seeds' noise share, against a margin of MARGIN of the variance (ST alone would count a framework that is
uniformly better, which is no difference in sensitivity). Supported where its interval lies above the margin, not
supported where it lies below, else inconclusive; "not testable" with one seed a point, where the noise cannot be
told apart from the interaction; not tested under two frameworks on one design.

Each claim: {claim, subject, verdict, headline, details}; its line "  [verdict] claim: headline" is at most
`sentences.HEADLINE_LIMIT` characters, as every claim's.
"""
from __future__ import annotations

from sensitivity.analysis.claims.sentences import HEADLINE_LIMIT

WHICH, DIFFER = "which parameter matters most", "frameworks differ in sensitivity"
WITHIN = "which parameter matters within an optimizer"


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


class WithinOptimizer:
    """Claim "which parameter matters within an optimizer", one verdict per framework of a designed study over an
    optimizer and an lr (`rankings.conditional`); none on a design without them."""
    name = WITHIN
    statement = "one parameter matters most within each optimizer"
    question = "which parameter matters once the optimizer is chosen"
    would_test = "sensitivity sweep SPACE --design sobol over optimizer and lr (a designed study)"
    anchor = "importance"

    def verdicts(self, record: dict, size: str, grow: str) -> list:
        return [_within(framework, r["within"], size, grow) for framework, r in record["per_framework"].items()
                if r.get("within")]


class FrameworksDiffer:
    """Claim "frameworks differ in sensitivity", one verdict over the frameworks of a designed study."""
    name = DIFFER
    statement = "frameworks differ in sensitivity"
    question = "whether frameworks differ in sensitivity"
    would_test = "sensitivity sweep SPACE --design sobol --frameworks A,B (a designed study of two frameworks)"
    anchor = "importance"

    def verdicts(self, record: dict, size: str, grow: str) -> list:
        return [_differ(record.get("framework_factor"), size, grow)]


DESIGN_CLAIMS = (WhichParameter(), WithinOptimizer(), FrameworksDiffer())  # in the order they print


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


def _within(framework: str, within: dict, size: str, grow: str) -> dict:
    levels, group = within["levels"], within["group"]
    closed = f"{{{', '.join(group)}}} explain {_est(within['closed'])}"
    listed = "; ".join(f"{level}: " + (", ".join(f"{p} S1 {_est(v['first'], 3)}, ST {_est(v['total'], 3)}"
                                                 for p, v in r["parameters"].items()) + f" ({r['why']})"
                                       if "parameters" in r else r["why"]) for level, r in levels.items())
    noise = (f"the noise of {within['seeds']} seeds a point subtracted" if within["noise_subtracted"] else
             "one seed a point, so its noise is not subtracted and inflates ST")
    details = (f"{framework} ({size}; {noise}): within each {within['given']}, {listed}. The group "
               f"{{{', '.join(group)}}}'s closed index (both and their interaction): {_est(within['closed'], 3)}. How: "
               f"{within['how']}. An estimate outside [0, 1] is sampling error; its interval says how large.")
    tops = {}
    for level, r in levels.items():
        if r["settled"]:
            tops.setdefault(r["top"], []).append(level)
    said = "; ".join(f"{top} first within {', '.join(names)}" for top, names in tops.items())
    if all(r["settled"] for r in levels.values()):
        if len(tops) == 1:
            said = f"{next(iter(tops))} first within every {within['given']} ({', '.join(levels)})"
        return _claim(WITHIN, framework, "settled", f"{framework}: {said}; {closed}", details)
    apart, missing = {}, []
    for level, r in levels.items():
        if "parameters" not in r:
            missing.append(level)
        elif not r["settled"]:
            order = sorted(r["parameters"], key=lambda p: -r["parameters"][p]["total"][0])
            apart.setdefault(tuple(order), []).append(level)
    open_ = [f"within {', '.join(names)} {order[0]} not separated from {', '.join(order[1:])}"
             for order, names in apart.items()] + ([f"{', '.join(missing)} not estimated"] if missing else [])
    head = f"{framework}: " + "; ".join(([said] if said else []) + open_) + f"; {closed}"
    return _claim(WITHIN, framework, "not settled", head, details + f" A larger design may settle it: {grow}.")


def _differ(factor, size: str, grow: str) -> dict:
    if not factor:
        return _claim(DIFFER, "", "not tested", "needs two or more frameworks on every row of one design",
                      f"Needs two or more frameworks on every row of one design ({size}).")
    margin = factor["margin"]
    facts = (f"The framework as a factor of the design ({', '.join(factor['frameworks'])}, equally weighted, over "
             f"{factor['rows']} rows every framework completed; 95% bootstrap over {factor['base_rows']} base rows, "
             f"each with all its frameworks): ST(framework) {_est(factor['ST'])}, S1 {_est(factor['S1'])}, ST - S1 "
             f"{_est(factor['interaction'])} (ST counts a framework uniformly better, S1 only that; ST - S1 is what "
             "it moves through lr, optimizer and batch size, a difference in sensitivity)")
    if factor["beyond_noise"] is None:
        head = (f"ST(framework) {_est(factor['ST'])}, ST - S1 {_est(factor['interaction'])}; not testable with one "
                "seed a point: the seeds' noise is not told apart")
        return _claim(DIFFER, "", "not testable", head,
                      f"{facts}. With one seed a point, ST - S1 holds the seeds' noise, which a second seed a point "
                      f"would measure and subtract; judged against a margin of {margin:g} of the variance. To test it: "
                      f"{grow.replace('--until-settled', '--seeds 2 --until-settled')}. Design: {size}.")
    beyond = factor["beyond_noise"]
    said = (f"{facts}; the seeds' noise share {factor['noise']:.3f} ({factor['seeds']} seeds a point), "
            f"subtracted: {_est(beyond)}, against a margin of {margin:g} of the variance")
    head = f"ST - S1 of the framework less noise {_est(beyond)}; ST {_est(factor['ST'])}; margin {margin:g}"
    if beyond[1] > margin:
        return _claim(DIFFER, "", "supported", head, f"{said}: the frameworks differ in sensitivity. Design: {size}.")
    if beyond[2] < margin:
        return _claim(DIFFER, "", "not supported", head,
                      f"{said}: any difference in sensitivity lies below the margin. Design: {size}.")
    return _claim(DIFFER, "", "inconclusive", head,
                  f"{said}: the interval holds the margin. Design: {size}. A larger design narrows it: {grow}.")
