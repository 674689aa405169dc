"""The claims the Findings judge, in the order they print: one line each. A new claim is one module of this room
implementing `base.Claim` and one line here (docs/architecture.md, "Adding a claim"). The claims of a designed
study (`base.DesignClaim`) are listed beside their words, in `sensitivity.DESIGN_CLAIMS`."""
from __future__ import annotations

from sensitivity.analysis.claims.dataset_transfer import DatasetTransfer
from sensitivity.analysis.claims.framework_transfer import FrameworkTransfer
from sensitivity.analysis.claims.robustness import Robustness
from sensitivity.analysis.claims.runtime import RuntimeAccuracy
from sensitivity.analysis.claims.tunability import Tunability

CLAIMS = (Tunability(), DatasetTransfer(), FrameworkTransfer(), Robustness(), RuntimeAccuracy())
BY_NAME = {claim.name: claim for claim in CLAIMS}
