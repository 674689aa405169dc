"""`sensitivity tunability`: what each framework's own default leaves on the table, and which knob recovers it
(the plan is `sweep.tunability`'s, the analysis `analysis.tables.tunability`'s and the claim's). Two phases into
one study: the grid on the selection seeds, then the configurations it chose and the default on fresh seeds. A
run stopped in either phase resumes with the same command: the planned trials the study holds are not run again,
and the selection, read from them, chooses the same configurations."""
from __future__ import annotations

from sensitivity import datasets, frameworks
from sensitivity.commands.budgets import add_budget_cut, cut_of
from sensitivity.commands.common import EXIT_OK, UsageError, number
from sensitivity.commands.launch import add_run_options, check_study_name, run_command, sweep_options
from sensitivity.config.defaults import DefaultsError, load_table
from sensitivity.config.spaces import MAX_SEEDS
from sensitivity.studies import catalog
from sensitivity.studies.storage import default_url
from sensitivity.sweep.driver import SweepError, check_destinations, check_inputs, run_space
from sensitivity.sweep.plans import defaults_space, own_default
from sensitivity.sweep.tuning import stop_ray
from sensitivity.sweep.tunability import KNOBS, TunabilityError, check_knobs, fresh_plan, selection_plan

COMMAND = "tunability"


def add_parsers(commands) -> None:
    p = commands.add_parser(COMMAND, help="what each framework's own default leaves on the table against the same "
                                          "framework tuned on the same data, and which knob recovers it")
    p.add_argument("--frameworks", help="comma-separated (default: every framework usable here)")
    p.add_argument("--dataset", default="digits", help="default digits")
    p.add_argument("--defaults", help="comma-separated names of search_spaces/defaults.yaml, each run on its own "
                                      "framework (default: each framework's own default for the dataset)")
    p.add_argument("--knobs", default="lr,optimizer",
                   help=f"comma-separated knobs of the grid around each default, from {', '.join(KNOBS)} (default "
                        "lr,optimizer: lr over 5 decades around the default's, optimizer over sgd, momentum and "
                        "adam at the default's absolute lr)")
    p.add_argument("--selection-seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS), default=1,
                   help="seeds each grid point runs on for the selection, on validation (default 1)")
    p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS), default=5,
                   help="fresh seeds the chosen configurations and the default run on (default 5)")
    add_budget_cut(p)
    add_run_options(p)
    p.set_defaults(handler=_cmd_tunability, command=COMMAND)


def _chosen_entries(args, names: list) -> list:
    entries = load_table()
    if args.defaults is None:
        found = [own_default(entries, f, args.dataset) for f in names]
        found = [e for e in found if e is not None and e.kind == "default" and e.published_epochs(args.dataset)]
        if not found:
            raise UsageError(f"sensitivity {COMMAND}: no framework among {', '.join(names)} has a default of its own "
                             f"with a budget for {args.dataset}; give --defaults NAME")
        return found
    by_name = {e.name: e for e in entries}
    chosen = []
    for name in args.defaults.split(","):
        entry = by_name.get(name)
        if entry is None:
            raise UsageError(f"sensitivity {COMMAND}: --defaults: {name!r} is not in search_spaces/defaults.yaml; "
                             f"allowed: {', '.join(by_name)}")
        if entry.kind != "default" or entry.runs_on not in names:
            own = [e.name for e in entries if e.kind == "default" and e.runs_on in names]
            what = "a shared setting, nobody's own" if entry.kind != "default" else f"it runs on {entry.runs_on}"
            raise UsageError(f"sensitivity {COMMAND}: --defaults: {name} is not the own default of one framework among "
                             f"{', '.join(names)} ({what}); allowed: {', '.join(own) or 'none'}")
        chosen.append(entry)
    return chosen


def _cmd_tunability(args) -> int:
    names = args.frameworks.split(",") if args.frameworks else [n for n in frameworks.FRAMEWORKS
                                                                 if frameworks.probe(n)[1]]
    for name in names:
        if name not in frameworks.FRAMEWORKS:
            raise UsageError(f"sensitivity {COMMAND}: --frameworks: unknown {name!r}; allowed: "
                             f"{', '.join(frameworks.FRAMEWORKS)}")
    if args.dataset not in datasets.REGISTRY:
        raise UsageError(f"sensitivity {COMMAND}: --dataset: unknown {args.dataset!r}; allowed: "
                         f"{', '.join(datasets.REGISTRY)}")
    knobs = args.knobs.split(",")
    check_study_name(args.study, COMMAND)
    try:
        check_knobs(knobs)
        entries = _chosen_entries(args, names)
        space = defaults_space(args.study or COMMAND, sorted({e.runs_on for e in entries}), [args.dataset],
                               args.seeds)
        check_destinations(sweep_options(args, 1))  # nothing written yet
        plan = selection_plan(space, entries, args.dataset, knobs, args.selection_seeds, cut_of(args))
        check_inputs(space, sweep_options(args, 1), [args.dataset])
    except (TunabilityError, DefaultsError, SweepError) as exc:
        raise UsageError(f"sensitivity {COMMAND}: {exc}")
    except datasets.DatasetError as exc:
        raise UsageError(f"sensitivity {COMMAND}: dataset {exc}")
    study = args.study or space.study
    try:
        print(f"selection: {len(plan)} runs ({len(plan) // max(1, len(entries) * args.selection_seeds)} grid points "
              f"a default x {args.selection_seeds} selection seed(s), {len(entries)} default(s)), on validation")
        code = run_command(COMMAND, lambda: run_space(space, sweep_options(args, len(plan)), plan, keep_ray=True))
        if code != EXIT_OK:
            return code
        fresh = _fresh(args, space, entries, knobs, study)
        total = len(plan) + len(fresh)
        print(f"fresh seeds: {len(fresh)} runs (the chosen configurations and the default, {args.seeds} seeds each)")
        return run_command(COMMAND, lambda: run_space(space, sweep_options(args, total), plan + fresh))
    finally:
        stop_ray()


def _fresh(args, space, entries: list, knobs: list, study: str) -> list:
    """The fresh phase's plan: each default's chosen configurations (read from the study's selection runs)."""
    # lazy: the analysis' tables (pandas), once the selection has run
    from sensitivity.analysis.tables.tunability import selections

    chosen = selections(catalog.load(study, args.storage or default_url()))
    plan = []
    for entry in entries:
        points = [s.point for key, (picked, _) in chosen.items() if key[2] == entry.name for s in picked]
        print(f"{entry.name} on {entry.runs_on}: " + "; ".join(
            f"{s.role}: {', '.join(f'{k}={v}' for k, v in s.point.items())} (validation {s.val_score:.3f})"
            for key, (picked, _) in chosen.items() if key[2] == entry.name for s in picked))
        plan += fresh_plan(space, entry, args.dataset, knobs, points, args.seeds, cut_of(args))
    return plan
