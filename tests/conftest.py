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


@pytest.fixture(scope="session")
def ray_cluster_env():
    """The environment of a `ray start` with Ray's token authentication (2.60's default for a cluster), its
    token made first where this machine has none (a local Ray makes one too, so it is there only where a
    local sweep ran before: a cluster test run alone would fail without it)."""
    import subprocess
    import sys
    from pathlib import Path

    if not (Path.home() / ".ray" / "auth_token").exists() and not os.environ.get("RAY_AUTH_TOKEN"):
        subprocess.run([str(Path(sys.executable).parent / "ray"), "get-auth-token", "--generate"], check=True,
                       stdout=subprocess.DEVNULL, timeout=60)
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
