#!/usr/bin/env bash
# Create or update the two framework environments; safe to run again (a stamp skips what is current).
#   .venv/         modern (numpy 2): the driver, torch, tensorflow-cpu, keras, jax+flax, pytensor, every optional part
#   .venv-legacy/  legacy (numpy 1.23.5): mxnet, chainer, Theano, and `sensitivity` itself for the worker
#   and Debian's chromium (image export, browser test) when run as root with apt
# Usage: scripts/setup.sh [modern|legacy|system|all]   (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHICH=${1:-all}

stamp_of() { cat pyproject.toml "$@" | sha256sum | cut -d' ' -f1; }

ensure_venv() {  # ensure_venv DIR
    if [ ! -x "$1/bin/python" ]; then
        "$PYTHON" -m venv "$1"
    fi
    "$1/bin/python" -m pip install -q --upgrade "pip>=26" "setuptools<81" wheel
}

setup_modern() {
    local stamp; stamp=$(stamp_of constraints/modern.txt constraints/modern-requirements.txt)
    if [ -f .venv/.setup-stamp ] && [ "$(cat .venv/.setup-stamp)" = "$stamp" ]; then
        echo "setup: .venv is current"; return
    fi
    echo "setup: building .venv (modern)"
    ensure_venv .venv
    .venv/bin/pip install -q -c constraints/modern.txt \
        -r constraints/modern-requirements.txt -e ".[all]"
    echo "$stamp" > .venv/.setup-stamp
}

setup_legacy() {
    local stamp; stamp=$(stamp_of constraints/legacy.txt constraints/legacy-requirements.txt constraints/legacy-build.txt)
    if [ -f .venv-legacy/.setup-stamp ] && [ "$(cat .venv-legacy/.setup-stamp)" = "$stamp" ]; then
        echo "setup: .venv-legacy is current"; return
    fi
    echo "setup: building .venv-legacy (legacy)"
    ensure_venv .venv-legacy
    .venv-legacy/bin/pip install -q -c constraints/legacy.txt \
        --build-constraint constraints/legacy-build.txt \
        -r constraints/legacy-requirements.txt -e ".[dev]"
    echo "$stamp" > .venv-legacy/.setup-stamp
}

setup_system() {  # Debian's Chromium: kaleido's image export and the report's browser test need it
    if command -v chromium >/dev/null 2>&1; then return; fi
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing Debian's chromium"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
    else
        echo "setup: chromium is missing: install Debian's chromium for PNG/SVG/PDF export" >&2
    fi
}

case "$WHICH" in
    modern) setup_modern ;;
    legacy) setup_legacy ;;
    system) setup_system ;;
    all) setup_system; setup_modern; setup_legacy ;;
    *) echo "usage: scripts/setup.sh [modern|legacy|system|all]" >&2; exit 2 ;;
esac
