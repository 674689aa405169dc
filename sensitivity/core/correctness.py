"""Per-sample correctness on the test set, packed: one bit per test sample, as base64 text.

A transfer study's trials record which test samples their model classified correctly (`TrialSpec.
record_correct`), so that two configurations compared on the same test set are compared sample by sample and
the test set's own sampling error enters the interval (`analysis.intervals.contrast`). 1,000 samples take 168
characters; other studies record nothing, so large studies do not grow.
"""
from __future__ import annotations

import base64
from typing import Optional

import numpy as np


def pack(correct) -> str:
    """"<n>:<base64 of the bits>" of a boolean vector."""
    bits = np.asarray(correct, bool).ravel()
    return f"{len(bits)}:{base64.b64encode(np.packbits(bits).tobytes()).decode('ascii')}"


def unpack(text: Optional[str]) -> Optional[np.ndarray]:
    """The boolean vector of `pack`'s text; None for None or text that is not such a record."""
    if not isinstance(text, str) or ":" not in text:
        return None
    count, _, data = text.partition(":")
    try:
        n = int(count)
        bits = np.unpackbits(np.frombuffer(base64.b64decode(data, validate=True), np.uint8))
    except ValueError:
        return None
    return bits[:n].astype(bool) if len(bits) >= n >= 0 else None
