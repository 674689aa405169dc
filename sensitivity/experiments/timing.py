"""The plan of `sensitivity timing`: a sweep's chosen configurations run again one at a time, pinned to one core,
on fresh seeds: their train times alone, beside the times the sweep measured with trials side by side, and their
test accuracy free of the choice (issue 41: the choice on validation among the sweep's configurations, on the
sweep's seeds, carries the winner's curse; fresh seeds do not).

Per framework (and regime) of the sweep, its `configs` best configurations on mean validation accuracy over
seeds, each on the seed-0 trial's spec as it ran with its seed replaced by each of `seeds` fresh ones, the seeds
after the sweep's largest; ordered seed by seed and rank by rank across frameworks (the first of each framework,
then the second of each, ...), so that a drift of the machine's speed falls on every framework alike. Each planned
trial names the sweep trial it times (`timed_trial`), and is marked `timing: alone` and `fresh_seed: true`.
"""
from __future__ import annotations

from sensitivity.sweep.plans import PlannedTrial

PINNED = (0,)  # the core an alone run is pinned to


class TimingError(ValueError):
    """Nothing to time: one line naming the study and what would do."""


def timing_plan(sweep, configs: int, seeds: int = 3) -> tuple:
    """(the planned trials (see the module) of the Optuna study `sweep`, its frameworks, its regimes, its
    dataset)."""
    # lazy: pandas
    from sensitivity.analysis.tables.seeds import seed_intervals
    from sensitivity.analysis.table import REGIME, UNFRAMED, trials_table, unframed

    table = trials_table(sweep)
    if unframed(table):
        raise TimingError(f"study {sweep.study_name}: {UNFRAMED}")
    ok = table[table["outcome"].eq("ok") & table["config_id"].notna()]
    if "planned" in ok:
        ok = ok[~ok["planned"].fillna(False).astype(bool)]
    if ok.empty:
        raise TimingError(f"study {sweep.study_name} has no sampled trial that finished with status ok: run the "
                          "sweep first")
    intervals = seed_intervals(ok, metrics=("val_accuracy", "accuracy", "train_time_s"))
    chooser = "val_accuracy_mean" if intervals["val_accuracy_mean"].notna().any() else "accuracy_mean"
    ranked = intervals.dropna(subset=[chooser]).sort_values(chooser, ascending=False, kind="stable")
    chosen = {key: list(part["config_id"])[:configs] for key, part in ranked.groupby(["framework", REGIME])}
    trials = {t.number: t for t in sweep.get_trials(deepcopy=False)}
    several = len({regime for _, regime in chosen}) > 1  # the regime is then a parameter of the study's space
    first = int(table["seed"].max()) + 1 if table["seed"].notna().any() else 0
    plan = []
    for seed in range(first, first + seeds):
        for rank in range(configs):
            for (framework, regime), ids in sorted(chosen.items()):
                if rank >= len(ids):
                    continue
                runs = ok[ok["config_id"].eq(ids[rank])].sort_values("seed")
                number = int(runs["number"].iloc[0])
                spec = dict(trials[number].user_attrs["spec"])
                for field in ("keep_weights", "keep_checkpoints", "device", "timeout"):
                    spec.pop(field, None)
                spec.update(threads=1, pin_cpus=list(PINNED), seed=seed)
                plan.append(PlannedTrial({"framework": framework, **({"semantics": regime} if several else {})},
                                         spec, {"seed": seed, "timing": "alone", "fresh_seed": True,
                                                "timed_study": sweep.study_name, "timed_trial": number,
                                                "config_id": f"alone:{ids[rank]}"}))
    frameworks = sorted({framework for framework, _ in chosen})
    regimes = tuple(sorted({regime for _, regime in chosen}, key=("native", "canonical").index))
    return plan, frameworks, regimes, str(ok["dataset"].iloc[0])
