"""`sensitivity sweep`, `studies` and `dashboard`: running and reading studies."""
from __future__ import annotations

import argparse
import socket

from sensitivity import datasets, frameworks
from sensitivity.commands.budgets import add_budget, add_budget_cut, cut_of
from sensitivity.commands.common import EXIT_OK, MAX_TRIALS, UsageError, number, port, storage_errors
from sensitivity.commands.designed import designed_sweep
from sensitivity.commands.launch import (add_dry_run, add_run_options, check_model, check_study_name, print_forecast,
                                         run_checks, run_command, sweep_options)
from sensitivity.config.defaults import HALVES, DefaultsError, family, load_table
from sensitivity.config.design import DESIGNS, MORRIS_LEVELS
from sensitivity.config.spaces import MAX_SEEDS
from sensitivity.core import paths
from sensitivity.core.spec import MAX_SEED
from sensitivity.forecast.launch import sweep_runs
from sensitivity.studies import catalog
from sensitivity.studies.redaction import describe
from sensitivity.studies.storage import default_url
from sensitivity.sweep import trial_log
from sensitivity.sweep.crossover import CrossoverError, crossover_plan, resolve
from sensitivity.sweep.driver import (SweepError, check_destinations, check_inputs, run_space, run_sweep,
                                      sweep_plan)
from sensitivity.sweep.plans import default_plan, defaults_space
from sensitivity.sweep.samplers import PRUNERS, SAMPLERS



def add_parsers(commands) -> None:
    _add_sweep_parser(commands)
    _add_study_parsers(commands)


def _add_sweep_parser(commands) -> None:
    p = commands.add_parser("sweep", help="run a sweep of a search space on Ray Tune into an Optuna study")
    p.add_argument("space", help="search_spaces/NAME.yaml")
    p.add_argument("--trials", type=number(int, 0, strict=True, maximum=MAX_TRIALS), required=True,
                   help="final trials the study should hold (orphans of a killed run do not count)")
    p.add_argument("--sampler", choices=SAMPLERS, help="default tpe")
    p.add_argument("--design", choices=DESIGNS, help="configurations from a design, not a sampler: sobol (Saltelli, "
                   "for Sobol' indices) or morris (trajectories); --trials is then the runs per framework")
    p.add_argument("--levels", type=number(int, 0, strict=True, maximum=64), default=MORRIS_LEVELS,
                   help=f"a Morris design's grid levels (even, default {MORRIS_LEVELS})")
    p.add_argument("--until-settled", action="store_true",
                   help="with --design: add rounds, each doubling the design, until every framework's ranking is "
                        "settled or the next round would pass --max-trials")
    p.add_argument("--max-trials", type=number(int, 0, strict=True, maximum=MAX_TRIALS),
                   help="with --until-settled: the most runs per framework its rounds may spend")
    p.add_argument("--pruner", choices=PRUNERS, default="none")
    p.add_argument("--seed", type=number(int, 0, maximum=MAX_SEED), help="the sampler's seed")
    p.add_argument("--with-defaults", action="store_true",
                   help="run each framework's own default (search_spaces/defaults.yaml) first")
    p.add_argument("--frameworks", help="comma-separated: replaces the space's list of frameworks")
    p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS),
                   help="seeds per configuration: replaces the space's")
    p.add_argument("--dataset", help="replaces the space's dataset (e.g. digits-a, a half of digits)")
    p.add_argument("--model", help="replaces the space's model (default: the space's, else the dataset's own)")
    p.add_argument("--semantics", choices=("native", "canonical"),
                   help="the regime of every trial: replaces the space's fixed one (default: the space's, else native)")
    add_dry_run(p)
    add_run_options(p)
    p.set_defaults(handler=_cmd_sweep)
    for name, help_text in [("defaults", "each framework's own defaults on each dataset, as a study"),
                            ("transfer", "every framework's default on every framework and dataset, as a study")]:
        p = commands.add_parser(name, help=help_text)
        p.add_argument("--frameworks", help="comma-separated (default: every framework usable here)")
        p.add_argument("--datasets", default="mnist5k,digits", help="comma-separated (default mnist5k,digits)")
        p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS), default=1)
        p.add_argument("--defaults", help="comma-separated names of search_spaces/defaults.yaml (default: all)")
        add_budget_cut(p)
        add_budget(p, name)
        p.add_argument("--semantics", choices=("native", "canonical", "both"), default="native",
                       help="native (default): each framework's own optimizers, schedulers and initialisers; "
                            "canonical: the same formulas everywhere; both: each default in both regimes")
        p.add_argument("--canonical-seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS),
                       help="seeds a cell in the canonical regime (default: --seeds); the control's runs are "
                            "identical on every seed, so 2 show it")
        add_run_options(p)
        p.set_defaults(handler=_cmd_defaults, command=name)
    _add_crossover_parser(commands)


def _add_crossover_parser(commands) -> None:
    p = commands.add_parser("crossover", help="dataset transfer as Liu et al. define it: the configurations tuned "
                                              "for two datasets, each run on both, on one framework")
    p.add_argument("--framework", required=True)
    p.add_argument("--datasets", required=True, help="A,B: two datasets (two halves of one, digits-a,digits-b, make "
                                                    "a placebo)")
    p.add_argument("--tuned", action="append", default=[], metavar="DATASET=STUDY",
                   help="that side's configuration is the best of sweep STUDY on DATASET (validation accuracy), "
                        "frozen before the crossover runs; repeatable")
    p.add_argument("--default", action="append", default=[], metavar="DATASET=NAME",
                   help="that side's configuration is the published default NAME, tuned for DATASET's family "
                        "(default: the framework's own)")
    p.add_argument("--seeds", type=number(int, 0, strict=True, maximum=MAX_SEEDS), default=5)
    p.add_argument("--semantics", choices=("native", "canonical", "both"), default="native")
    p.add_argument("--model", help="the model every run trains, on both datasets (default: each dataset's own)")
    add_budget_cut(p)
    add_budget(p, "crossover")
    add_run_options(p)
    p.set_defaults(handler=_cmd_crossover, command="crossover")


def _sides_option(values: list, option: str, datasets: list) -> dict:
    found = {}
    for value in values:
        dataset, sep, name = value.partition("=")
        if not sep or not name or dataset not in datasets:
            raise UsageError(f"sensitivity crossover: {option} {value!r}: expected DATASET=NAME with DATASET one of "
                             f"{', '.join(datasets)}")
        if dataset in found:
            raise UsageError(f"sensitivity crossover: {option}: {dataset} given twice")
        if option == "--tuned":  # a study's name, checked before anything is read or written
            try:
                paths.check_name(name)
            except paths.UnsafeName as exc:
                raise UsageError(f"sensitivity crossover: --tuned {dataset}=...: {exc}")
        found[dataset] = name
    return found


def _cmd_crossover(args) -> int:
    if args.framework not in frameworks.FRAMEWORKS:
        raise UsageError(f"sensitivity crossover: --framework: unknown {args.framework!r}; allowed: "
                         f"{', '.join(frameworks.FRAMEWORKS)}")
    sets = args.datasets.split(",")
    if len(sets) != 2 or sets[0] == sets[1]:
        raise UsageError(f"sensitivity crossover: --datasets {args.datasets!r}: give two different datasets, A,B")
    for name in sets:
        if name not in datasets.REGISTRY:
            raise UsageError(f"sensitivity crossover: --datasets: unknown {name!r}; allowed: "
                             f"{', '.join(datasets.REGISTRY)}")
    if family(sets[0]) == family(sets[1]) and set(sets) not in HALVES:
        raise UsageError(f"sensitivity crossover: --datasets {args.datasets!r}: both are drawn from "
                         f"{family(sets[0])} and overlap; a placebo crosses two disjoint halves: "
                         f"{'; '.join(','.join(sorted(h)) for h in HALVES)}")
    check_model(args.model, "crossover")
    tuned, named = _sides_option(args.tuned, "--tuned", sets), _sides_option(args.default, "--default", sets)
    both = set(tuned) & set(named)
    if both:
        raise UsageError(f"sensitivity crossover: {sorted(both)[0]}: give --tuned or --default, not both")
    check_study_name(args.study, "crossover")
    regimes = ("native", "canonical") if args.semantics == "both" else (args.semantics,)
    space = defaults_space(args.study or "crossover", [args.framework], sets, args.seeds, regimes)
    try:  # the destinations, then the plan (it reads the datasets, writing nothing), then the cache
        check_destinations(sweep_options(args, 1))
        sides = [resolve(args.framework, d, regimes[0], tuned.get(d), named.get(d), args.storage) for d in sets]
        plan = crossover_plan(space, args.framework, sides, args.seeds, cut_of(args), model=args.model,
                              budgets=args.budget)
        check_inputs(space, sweep_options(args, 1), sets)
    except (SweepError, CrossoverError, DefaultsError) as exc:
        raise UsageError(f"sensitivity crossover: {exc}")
    except datasets.DatasetError as exc:
        raise UsageError(f"sensitivity crossover: dataset {exc}")
    return run_command("crossover", lambda: run_space(space, sweep_options(args, len(plan)), plan))


def _cmd_sweep(args) -> int:
    check_study_name(args.study, "sweep")
    check_model(args.model, "sweep")
    names = args.frameworks.split(",") if args.frameworks else None
    overrides = dict(frameworks=names, seeds=args.seeds, semantics=args.semantics, dataset=args.dataset,
                     model=args.model)
    if args.design:
        return designed_sweep(args, overrides)
    if args.until_settled or args.max_trials is not None:
        option = "--until-settled" if args.until_settled else "--max-trials"
        raise UsageError(f"sensitivity sweep: {option}: only with --design sobol|morris (it adds rounds of a design)")
    if args.dry_run:
        return _dry_run_sweep(args, overrides)
    return run_command("sweep", lambda: run_sweep(args.space, sweep_options(args, args.trials), args.with_defaults,
                                                  **overrides))


def _dry_run_sweep(args, overrides: dict) -> int:
    args.command = "sweep"
    options = sweep_options(args, args.trials)
    space, plan = run_checks("sweep", lambda: sweep_plan(args.space, options, args.with_defaults, **overrides))
    runs = sweep_runs(space, args.trials, options, plan)
    print_forecast(args, runs, f"plan of sweep {args.space} (study {args.study or space.study}): {args.trials} "
                               f"trials, {len(plan)} of them planned defaults; nothing launched", len(runs) > len(plan))
    return EXIT_OK


def _cmd_defaults(args) -> int:
    names = args.frameworks.split(",") if args.frameworks else [n for n in frameworks.FRAMEWORKS
                                                                 if frameworks.probe(n)[1]]
    sets = args.datasets.split(",")
    try:
        entries = [e.name for e in load_table()]
    except DefaultsError as exc:
        raise UsageError(f"sensitivity {args.command}: {exc}")
    chosen = args.defaults.split(",") if args.defaults is not None else None
    for name, known, option in [(n, frameworks.FRAMEWORKS, "--frameworks") for n in names] + \
                               [(d, datasets.REGISTRY, "--datasets") for d in sets] + \
                               [(d, entries, "--defaults") for d in chosen or ()]:
        if name not in known:
            raise UsageError(f"sensitivity {args.command}: {option}: unknown {name!r}; allowed: {', '.join(known)}")
    check_study_name(args.study, args.command)
    regimes = ("native", "canonical") if args.semantics == "both" else (args.semantics,)
    if args.canonical_seeds is not None and "canonical" not in regimes:
        raise UsageError(f"sensitivity {args.command}: --canonical-seeds {args.canonical_seeds}: needs --semantics "
                         "both or canonical; allowed: a whole number of seeds with one of those")
    space = defaults_space(args.study or args.command, names, sets, args.seeds, regimes)
    try:
        check_destinations(sweep_options(args, 1))  # nothing written yet
    except SweepError as exc:
        raise UsageError(f"sensitivity {args.command}: {exc}")
    try:  # the plan reads the datasets (writing nothing), so it is made and checked before the cache is written
        transfer = args.command == "transfer"
        plan = default_plan(space, names, sets, args.seeds, cut_of(args), transfer=transfer, names=chosen,
                            record_correct=transfer, budgets=args.budget, canonical_seeds=args.canonical_seeds)
    except DefaultsError as exc:
        raise UsageError(f"sensitivity {args.command}: {exc}")
    except datasets.DatasetError as exc:
        raise UsageError(f"sensitivity {args.command}: dataset {exc}")
    if not plan:
        raise UsageError(f"sensitivity {args.command}: nothing to run: no default has a budget for "
                         f"{', '.join(sets)}" + (f" among {', '.join(chosen)}" if chosen else ""))
    try:
        check_inputs(space, sweep_options(args, 1), sets)  # the destinations, then the datasets into the cache
    except SweepError as exc:
        raise UsageError(f"sensitivity {args.command}: {exc}")
    return run_command(args.command, lambda: run_space(space, sweep_options(args, len(plan)), plan))


def _add_study_parsers(commands) -> None:
    p = commands.add_parser("studies", help="list the studies of a storage, or show one")
    p.add_argument("--storage")
    p.set_defaults(handler=_cmd_studies, action="list", name=None)
    actions = p.add_subparsers(dest="action", required=False)  # options before or after the NAME
    shown = actions.add_parser("show", help="one study's trials and its best trial or Pareto set")
    shown.add_argument("name")
    listed = actions.add_parser("list", help="every study of the storage")
    rebuilt = actions.add_parser("rebuild", help="restore a study from its trial log (results/trial-logs/STUDY.jsonl)")
    rebuilt.add_argument("log", help="the study's trial log")
    rebuilt.add_argument("--study", help="the name to give the study (default: the log's)")
    for sub in (shown, listed, rebuilt):
        sub.add_argument("--storage", default=argparse.SUPPRESS)  # keeps `studies --storage URL show NAME` too
    p = commands.add_parser("dashboard", help="optuna-dashboard on 127.0.0.1")
    p.add_argument("--storage")
    p.add_argument("--port", type=port, default=8080)
    p.add_argument("--artifact-dir", metavar="DIR", help="the artifact store optuna-dashboard shows (default: "
                   "artifacts/ beside the storage, where report --to-dashboard writes the figures, if it exists)")
    p.set_defaults(handler=_cmd_dashboard)


def _cmd_studies(args) -> int:
    if args.action == "rebuild":
        return _rebuild(args)
    with storage_errors("studies"):
        if args.action == "show":
            print(catalog.show(catalog.load(args.name, args.storage)))
            return EXIT_OK
        rows = catalog.list_studies(args.storage)
    width = max([len("study"), *(len(row["study"]) for row in rows)])  # the main job's names run past 40
    print(f"{'study':<{width}} {'trials':>6} {'final':>6} {'directions':<22} started")
    for row in rows:
        print(f"{row['study']:<{width}} {row['trials']:>6} {row['final']:>6} {row['directions']:<22} {row['started']}")
    return EXIT_OK


def _rebuild(args) -> int:
    if args.study is not None:
        check_study_name(args.study, "studies rebuild")
    with storage_errors("studies rebuild"):
        try:
            name, count = trial_log.rebuild(args.log, args.storage, args.study)
        except (trial_log.LogError, paths.UnsafeName) as exc:
            raise UsageError(f"sensitivity studies rebuild: {exc}")
    print(f"study {name} in {describe(args.storage or default_url())}: {count} trials restored from {args.log}")
    return EXIT_OK


def _cmd_dashboard(args) -> int:
    with socket.socket() as probe:  # a port in use or not ours is one line now, not the dashboard's traceback
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError as exc:
            raise UsageError(f"sensitivity dashboard: --port {args.port}: {exc.strerror or exc}")
    with storage_errors("dashboard"):
        return catalog.dashboard(args.storage, args.port, args.artifact_dir)


