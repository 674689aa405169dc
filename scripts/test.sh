#!/usr/bin/env bash
# Run the test suite in both framework environments (after scripts/setup.sh).
# Extra arguments go to the modern run, e.g. scripts/test.sh -x -k runner
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== tests in .venv (modern environment)"
.venv/bin/python -m pytest -p no:cacheprovider "$@"
echo "== tests in .venv-legacy (legacy environment): portable tests and its frameworks' contract"
legacy_env=$(.venv/bin/python -c 'import shlex; from sensitivity.core import envs
env = envs.worker_environ("legacy")
print(" ".join(f"{k}={shlex.quote(env[k])}" for k in [*envs.WORKER_ENV["legacy"], "OPENBLAS_CORETYPE"] if k in env))')
eval "env $legacy_env .venv-legacy/bin/python -m pytest -p no:cacheprovider -m 'portable or contract' -q"
