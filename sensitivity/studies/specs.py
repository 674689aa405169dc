"""The TrialSpec a stored trial ran, for the commands that run it again or attack its model.

Apart from `records` because it reads the search space (`config.spaces`, which knows the frameworks), and the
analysis, which reads `records`, imports no framework code (pyproject.toml's contracts)."""
from __future__ import annotations

from sensitivity.studies.records import REGIME_BEFORE_SEMANTICS


def trial_spec(study, trial):
    """The TrialSpec a trial ran: its `spec` attribute, or for a study from before that was recorded, the
    spec rebuilt from the stored space, its parameters, seed and planned configuration."""
    from sensitivity.config.spaces import Space  # lazy: pydantic, which `records`' readers do not need
    from sensitivity.core.spec import TrialSpec

    attrs = trial.user_attrs
    if "spec" in attrs:
        return TrialSpec.model_validate({**REGIME_BEFORE_SEMANTICS, **attrs["spec"]})
    spec = Space.model_validate(study.user_attrs["space"]).trial_spec(trial.params, attrs.get("seed", 0))
    if attrs.get("planned"):
        spec = TrialSpec(**{**spec.model_dump(), **attrs["planned"], "seed": attrs.get("seed", 0)})
    return spec
