"""Framework transfer pools pairs that share arms: each default's home arm is the reference of every pair that
moves it. Pooled as one contrast of the arms (`transfer.pooled_transfer`), a shared arm is counted once, and the
95% interval of the pairs' mean covers its planted value 93-97% of the time over 500 planted studies."""
import numpy as np
from planted import DEFAULTS, REPORTED, as_frame, transfer_rows, true_accuracy

from sensitivity.analysis.tables.transfer import pooled_transfer

REPEATS = 500


def planted_mean(regime: str) -> float:
    """The true mean over the study's pairs (every default moved from home to each other framework, on each
    dataset) of moved minus home."""
    rows = transfer_rows(np.random.default_rng(0), seeds=(1, 1), regimes=(regime,))
    pairs = {(r["default"], r["framework"], r["dataset"]) for r in rows if r["framework"] != DEFAULTS[r["default"]]}
    return float(np.mean([true_accuracy(d, f, ds, regime) - true_accuracy(d, DEFAULTS[d], ds, regime)
                          for d, f, ds in pairs]))


def test_pairs_sharing_arms_pooled_as_one_contrast_cover_the_planted_mean():
    rows = []
    for k in range(REPEATS):
        rows += transfer_rows(np.random.default_rng(5000 + k), seeds=(3, 6), regimes=(f"study{k:03d}",),
                              study=5000 + k)
    pooled = pooled_transfer(as_frame(rows, "shared-arms"))
    truth = planted_mean("study000")
    hits = [diff.low <= truth <= diff.high for diff, pairs in pooled.values() if diff.low is not None]
    pairs = {count for _, count in pooled.values()}
    coverage = float(np.mean(hits))
    REPORTED.append(f"framework transfer, {sorted(pairs)} pairs sharing home arms pooled as one contrast: coverage "
                    f"{coverage:.1%} of {len(hits)} planted studies (planted mean {truth:+.4f})")
    assert len(hits) >= 0.99 * REPEATS and 0.93 <= coverage <= 0.97  # 1 of 500 draws an arm with no value
