"""Shared fixtures: the whole run uses its own cache folder, never the user's."""
import os
import tempfile

import pytest

_SESSION_CACHE = tempfile.mkdtemp(prefix="sensitivity-test-cache-")
os.environ["SENSITIVITY_CACHE_DIR"] = _SESSION_CACHE  # inherited by worker processes too
os.environ.pop("SENSITIVITY_DATA_DIR", None)


@pytest.fixture
def session_cache_dir():
    return _SESSION_CACHE
