"""`sensitivity importance STUDY`: which hyper-parameter matters, per framework, with intervals.

On a study of `sweep --design sobol`: Sobol' S1 and ST with SALib's bootstrap intervals, S2 interactions; on
`--design morris`: mu* with its interval, and sigma; per framework, the ranking settled or not and why, and
between two frameworks the difference of the ranking index with its interval. On a study without a design
(one another program wrote included), per framework or over all trials as one group: the sampling family read
from the trials, the estimator that fits it (given-data S1 for independent draws, a surrogate on a prior design
for a model-based sampler), fANOVA and PED-ANOVA with bootstrap intervals, each said for what it answers
(`rankings.plain`). Bad input is one line and exit 2.
"""
from __future__ import annotations

import json
import sys

from sensitivity.commands.common import EXIT_OK, UsageError, load_study


def add_parsers(commands) -> None:
    p = commands.add_parser("importance", help="sensitivity indices with intervals, per framework: Sobol' or "
                                               "Morris of a designed study (sweep --design); of any other study, "
                                               "the estimator that fits how its trials were sampled")
    p.add_argument("study")
    p.add_argument("--storage")
    p.add_argument("--target", dest="objective", metavar="NAME",
                   help="the objective analysed; needed where a study without a design has several (a designed "
                        "study's default: its first)")
    p.add_argument("--objective", dest="objective", metavar="NAME", help="the same as --target")
    p.add_argument("--params", metavar="P1,P2", type=lambda text: [p for p in text.split(",") if p],
                   help="only these parameters (default: every parameter all complete trials sampled)")
    p.add_argument("--json", action="store_true", help="print JSON, not text")
    p.add_argument("--within", metavar="PARAM=VALUE", help="importance among the trials with that value (e.g. "
                   "optimizer=adam), per framework: fANOVA and PED-ANOVA (Sobol' indices cannot be conditioned)")
    p.add_argument("--out", help="also write the figure: one panel per framework, intervals drawn "
                                 "(.html, .png, .svg or .pdf)")
    p.set_defaults(handler=_cmd_importance)


def _cmd_importance(args) -> int:
    # lazy: numpy, SALib
    from sensitivity.analysis.rankings.designed import NoDesign, designed_importance, importance_record

    from sensitivity.commands.analysis import _check_out  # lazy: its module's parsers only
    from sensitivity.analysis.figures.export import FORMATS

    _check_out("importance", args.out, FORMATS)
    study = load_study("importance", args.study, args.storage)
    try:
        try:
            if args.within:
                raise NoDesign("--within")
            found = designed_importance(study, args.objective)
            if args.params:
                raise ValueError(f"--params: study {study.study_name} is a design, whose indices are of all its "
                                 "factors together")
            record = importance_record(found)
            shown = text(found, record)
        except NoDesign:
            # lazy: optuna's importance, scikit-learn
            from sensitivity.analysis.rankings.plain import plain_importance, plain_text, within_of
            within = within_of(args.within) if args.within else None
            record = plain_importance(study, args.objective, within=within, params=args.params)
            shown = plain_text(study.study_name, record)
    except ValueError as exc:
        raise UsageError(f"sensitivity importance: {exc}")
    print(json.dumps(record, indent=2) if args.json else shown)
    if args.out:
        # lazy: plotly
        from sensitivity.analysis.figures import designed_indices
        from sensitivity.analysis.figures.export import write
        kind = (record.get("ranking") or {}).get("title", "fANOVA and PED-ANOVA")
        title = f"{study.study_name}: {kind} indices of {record['objective']} per framework"
        figure = designed_indices.plot(designed_indices.Info(record, title))
        print(write(figure, args.out), file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def _interval(e) -> str:
    return f"{e[0]:.3f} [{e[1]:.3f}, {e[2]:.3f}]"


def text(found, record: dict) -> str:
    from sensitivity.analysis.rankings.designed import difference_verdict  # lazy: numpy, as the command's other imports

    designed, design = found.design, found.design.design
    seeds = ("one seed a point: seed noise enters the indices" if design.seeds == 1 else
             f"the mean of {design.seeds} seeds a point")
    lines = [f"study: {design.describe()}; objective {found.objective}; {seeds}; intervals: SALib's 95% "
             "bootstrap (conservative on this design)"]
    for framework, r in record["per_framework"].items():
        lines.append(f"\n{framework}: {r['n']} of {r['points']} points, {r['diverged']} diverged and "
                     f"{r.get('collapsed', 0)} collapsed run(s), each counted at the chance-level accuracy it left")
        if "parameters" not in r:
            lines.append(f"  no indices: {r['why']}")
            continue
        if designed.interactions:  # S1 and ST
            lines.append(f"  {'parameter':<16} {'S1 (alone)':<26} {'ST (with interactions)':<26} ST-S1")
            for name, p in sorted(r["parameters"].items(), key=lambda kv: -kv[1]["total"][0]):
                lines.append(f"  {name:<16} {_interval(p['first']):<26} {_interval(p['total']):<26} "
                             f"{p['total_minus_first']:.3f}")
            if r.get("interactions"):
                lines.append("  interactions (S2): " + "; ".join(f"{k} {_interval(v)}"
                                                                for k, v in r["interactions"].items()))
        else:
            lines.append(f"  {'parameter':<16} {'mu* (mean |effect|)':<26} sigma")
            for name, p in sorted(r["parameters"].items(), key=lambda kv: -kv[1]["mu_star"][0]):
                lines.append(f"  {name:<16} {_interval(p['mu_star']):<26} {p['sigma']:.3f}")
        lines.append(f"  ranking by {designed.index}: {'settled' if r['settled'] else 'not settled'}: {r['why']}")
        within = r.get("within")
        if within:
            lines.append(f"  within each {within['given']} (ST and S1 from the design's pick-freeze pairs at that "
                         f"{within['given']}; closed index of {{{', '.join(within['group'])}}} "
                         f"{_interval(within['closed'])}):")
            for level, w in within["levels"].items():
                listed = ", ".join(f"{name} S1 {_interval(v['first'])}, ST {_interval(v['total'])}"
                                   for name, v in w.get("parameters", {}).items())
                lines.append(f"    {level}: {listed + '; ' if listed else ''}"
                             f"{'settled' if w['settled'] else 'not settled'}: {w['why']}")
    for pair, params in record.get("differences", {}).items():
        a, b = pair.split("-", 1)
        index = designed.index
        parts = []
        for name, (est, low, high) in params.items():
            verdict = difference_verdict(a, b, low, high)
            parts.append(f"{name} {est:+.3f} [{low:+.3f}, {high:+.3f}] ({verdict})")
        lines.append(f"\n{index} of {a} minus {b}: " + "; ".join(parts))
    return "\n".join(lines)
