"""`sensitivity findings`: what a study, and the studies beside it, say about each claim of the benchmarks
(defaults transfer across datasets and frameworks, frameworks differ in robustness, accuracy costs runtime):
one verdict per claim and regime, with its effect, 95% interval, Holm-corrected test and the seeds behind it."""
from __future__ import annotations

import json

from sensitivity.analysis.claims.text import cached_records, findings_text
from sensitivity.commands.common import EXIT_OK, load_study, number
from sensitivity.config.design import DESIGN_ATTR


def add_parsers(commands) -> None:
    p = commands.add_parser("findings", help="what the study's data says about each claim: verdict, effect, 95%% "
                                             "interval, Holm-corrected test, seeds (per regime)")
    p.add_argument("study")
    p.add_argument("--with-study", action="append", default=[], metavar="NAME",
                   help="another study of the storage read with it (the study of sensitivity transfer, whose "
                        "robustness records count too); repeatable")
    p.add_argument("--json", action="store_true", help="print claims and comparisons as JSON")
    p.add_argument("--all", action="store_true", help="also print every comparison behind the claims")
    p.add_argument("--verbose", action="store_true", help="also print each claim's details beneath its line")
    p.add_argument("--effect", type=number(float, 0, strict=True), default=0.02,
                   help="the smallest difference of accuracy that matters (default 0.02): no effect is declared "
                        "where an interval lies within +-EFFECT, and seeds are counted to detect it")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_findings)


def _cmd_findings(args) -> int:
    study = load_study("findings", args.study, args.storage)
    others = [load_study("findings", name, args.storage) for name in args.with_study]
    # a study alone: the records a report cached, read without its trials or pandas; else computed (and cached)
    found = None if others else cached_records(study, args.effect)
    if found is None:
        # lazy: pandas
        from sensitivity.analysis.claims.findings import study_findings_records
        found = study_findings_records(study, others, effect=args.effect)
    designed = _designed_claims([study, *others])
    if args.json:
        print(json.dumps({"study": args.study, "with": args.with_study, "effect": args.effect, **found,
                          **({"sensitivity": designed} if designed else {})}, indent=2))
    else:
        heading = f"Findings of {args.study}" + (f" with {', '.join(args.with_study)}" if args.with_study else "")
        print(findings_text(found, heading, args.effect, every=args.all, verbose=args.verbose))
        for name, claims in designed.items():
            print(f"Sensitivity, designed study {name}:")
            for claim in claims:
                print(f"  [{claim['verdict']}] {claim['claim']}: {claim['headline']}")
                if args.verbose:
                    print(f"      {claim['details']}")
        if "note" in found:
            print(f"{args.study}: {found['note']}")
    return EXIT_OK


def _designed_claims(studies: list) -> dict:
    """{study: its sensitivity claims} of the studies run with `sweep --design`."""
    designed = [s for s in studies if DESIGN_ATTR in s.user_attrs]
    if not designed:
        return {}
    # lazy: pandas
    from sensitivity.analysis.rankings.designed import designed_importance, importance_record
    from sensitivity.analysis.claims.sensitivity import sensitivity_claims
    return {s.study_name: sensitivity_claims(s.study_name, importance_record(designed_importance(s)))
            for s in designed}
