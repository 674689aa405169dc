"""The sweep's progress bar: done, running, pruned and failed trials (orphans and surplus trials left out),
and the best so far, or the size of the Pareto set with several objectives. It reads every trial, so it is
redrawn at most once per REFRESH_S seconds (and at the start and end), not on each of the sweep's changes."""
from __future__ import annotations

import sys
import time

from sensitivity.studies.records import is_final

REFRESH_S = 1.0


class Progress:
    def __init__(self, study, total: int, enabled: bool = True):
        self.study, self.total, self.enabled = study, total, enabled
        self.bar = None
        self.drawn = float("-inf")  # time.monotonic() of the last redraw

    def __enter__(self) -> "Progress":
        if self.enabled:
            # lazy: tqdm
            from tqdm import tqdm
            self.bar = tqdm(total=self.total, file=sys.stderr, unit="trial", dynamic_ncols=True)
            self.refresh(force=True)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.refresh(force=True)
            self.bar.close()

    def refresh(self, force: bool = False) -> None:
        if self.bar is None or not force and time.monotonic() - self.drawn < REFRESH_S:
            return
        self.drawn = time.monotonic()
        # lazy: optuna
        from optuna.trial import TrialState
        trials = self.study.get_trials(deepcopy=False)
        counts = {state: sum(t.state == state for t in trials) for state in TrialState}
        done = sum(is_final(t) for t in trials)
        self.bar.n = min(done, self.total)
        postfix = {"running": counts[TrialState.RUNNING], "pruned": counts[TrialState.PRUNED],
                   "failed": sum(t.state == TrialState.FAIL and is_final(t) for t in trials)}
        if len(self.study.directions) == 1:
            complete = [t for t in trials if t.state == TrialState.COMPLETE]
            if complete:
                best = max if self.study.direction.name == "MAXIMIZE" else min
                postfix["best"] = f"{best(t.value for t in complete):.4f}"
        elif counts[TrialState.COMPLETE]:
            postfix["pareto"] = len(self.study.best_trials)  # the Pareto set's size
        self.bar.set_postfix(postfix, refresh=True)
