"""`sensitivity sweep --design sobol|morris`: a designed study's points as planned trials (issue 30).

Each framework runs the same design (its own copy of every point, so its indices are its own). A point is
queued once per training seed, as a planned trial whose parameters are the whole configuration and whose
`plan_key` names the framework, the design row and the seed (its `config_id` is design:FRAMEWORK:ROW,
which a re-queued orphan keeps): a resumed run (after kill -9) queues only the
points the study lacks, so the study ends with exactly the design's points, once each. The design (kind,
size, SALib seed, the parameter mapping) is the study's user attribute `design`; a rerun that asks another
design of the same study is refused before anything is written.
"""
from __future__ import annotations

import numpy as np

from sensitivity.config.design import DESIGN_ATTR, Design, configurations_of
from sensitivity.config.spaces import Space
from sensitivity.studies.storage import open_storage
from sensitivity.studies.trial_rows import has_trials
from sensitivity.sweep.plans import PlannedTrial


class DesignTrial(PlannedTrial):
    """A queued trial of a design point: its key is the framework, the row and the seed (two rows may map
    to the same configuration on a grid; each is still its own point of the design). Its `planned` is None:
    its parameters are the whole configuration, and the analysis counts it as a sample of the space (a
    framework default's `planned` keeps it out of importance)."""

    @property
    def key(self) -> str:
        return f"design:{self.attrs['design_framework']}:{self.attrs['design_row']}|seed={self.attrs['seed']}"


def design_plan(space: Space, design: Design) -> list:
    """The design's points on every framework of the space, `design.seeds` seeds each, in the design's order."""
    constant = {name: p.choices[0] for name, p in space.parameters.items()
                if p.type == "categorical" and len(p.choices) == 1}
    configurations = configurations_of(design.params, design.rows())
    plan = []
    for framework in space.frameworks:
        for row, configuration in enumerate(configurations):
            params = {"framework": framework, **constant, **configuration}
            for seed in range(design.seeds):
                attrs = {"config_id": f"design:{framework}:{row}", "seed": seed, "design_row": row,
                         "design_framework": framework}
                plan.append(DesignTrial(params, None, attrs))  # no `planned`: a design point samples the space
    return plan


def admit_design(url: str, name: str, design: Design) -> bool:
    """Whether study `name` may run `design`: it does not exist, holds it, or holds a smaller design whose rows
    begin the new one (a Saltelli design of a larger base from the same seed does: a design grows in rounds;
    the study's `design` attribute is then the larger one, and True is returned). ValueError (a sentence)
    where it holds another design, or trials and no design."""
    # lazy: optuna
    import optuna

    storage = open_storage(url)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return False
    stored = study.user_attrs.get(DESIGN_ATTR)
    if stored is None:
        if has_trials(study):
            raise ValueError(f"study {name} holds trials of a sweep without a design; a design needs a study of its "
                             "own: name a new --study")
        return False
    if stored == design.attrs():
        return False
    held = Design.from_attrs(stored)
    if _grows(held, design):
        study.set_user_attr(DESIGN_ATTR, design.attrs())
        return True
    raise ValueError(f"study {name} holds another design ({held.describe()}); rerun with its --design, --trials, "
                     "--seeds and --seed (or a larger --trials, where it grows the design), or name a new --study")


def _grows(held: Design, design: Design) -> bool:
    """Whether `design` extends `held`: same kind, mapping, seeds and levels, more points, the held rows first."""
    same = (held.kind, held.params, held.seeds, held.levels, held.seed) == \
        (design.kind, design.params, design.seeds, design.levels, design.seed)
    if not same or design.size <= held.size:
        return False
    old = held.rows()
    return bool(np.allclose(design.rows()[:len(old)], old))
