"""Optuna's TPE sampler, modelling only the most recent finished trials, so an ask costs the same at any
study size.

Optuna's TPESampler fits its Parzen estimators to every finished trial on each ask: its time grows linearly
with the study (docs/performance.md). Past WINDOW finished trials it would leave a large sweep behind, so
older trials leave the model (they stay in the study); the running trials of the window's span stay in it,
as Optuna's constant liar models them. Below WINDOW the sampler is Optuna's TPESampler exactly. Only the sampler changes: the study stays
plain Optuna, readable by Optuna and optuna-dashboard.
"""
from __future__ import annotations

from sensitivity import private_apis

WINDOW = 1_000  # finished trials (by number) that TPE models


class _Window(private_apis.StudyView):
    """The study, with the trials the sampler reads cut to the most recent ones by number that hold `size`
    finished trials. Running trials among them come too: TPE's constant liar (Optuna's default) models them
    as pending, and they do not take the finished trials' places (with 1,000 in flight they would fill it)."""

    def __init__(self, study, size: int):
        super().__init__(study)
        self.size = size

    def select(self, states, use_cache: bool) -> list:
        """The trials in `states` back to the `size`-th newest finished one in `states`, found walking back
        from the newest: O(size + running), not O(study)."""
        trials, finished = [], 0
        for trial in reversed(self.all_trials(use_cache)):
            if finished == self.size:
                break
            if states is None or trial.state in states:
                trials.append(trial)
                finished += trial.state.is_finished()
        trials.reverse()
        return trials


class WindowedTPESampler(private_apis.TPESamplerOnView):
    """TPESampler whose model (the split into good and bad trials, the Parzen estimators) sees only the
    `window` most recent finished trials; its other arguments are TPESampler's."""

    def __init__(self, *args, window: int = WINDOW, **kwargs):
        super().__init__(*args, **kwargs)
        self.window = window

    def view(self, study):
        return study if isinstance(study, _Window) else _Window(study, self.window)
