#!/usr/bin/env bash
# Create or update the two framework environments; safe to run again (a stamp skips what is current).
#   .venv/         modern (numpy 2): the driver, torch, tensorflow-cpu, keras, jax+flax, pytensor, every optional part
#   .venv-legacy/  legacy (numpy 1.23.5): mxnet, chainer, Theano, and `sensitivity` itself for the worker
#   and Debian's chromium (image export, browser test) when run as root with apt
# With an NVIDIA driver (nvidia-smi answers), .venv gets GPU builds over the CPU set: PyPI's CUDA torch,
# tensorflow[and-cuda] in place of tensorflow-cpu, and jax[cudaN] for the CUDA major the driver supports.
# .venv-legacy stays CPU-only (see `sensitivity frameworks`): MXNet's GPU builds stop at CUDA 11.7, Chainer 7
# needs CuPy 7 (no wheel for this Python, no kernels for current GPUs), Theano's GPU backend is gone.
# Usage: scripts/setup.sh [modern|legacy|system|all]   (default all)
#   SENSITIVITY_GPU=auto|yes|no (default auto: nvidia-smi decides); SENSITIVITY_SETUP_DRY_RUN=1 prints the
#   install commands instead of running them.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHICH=${1:-all}
DRY=${SENSITIVITY_SETUP_DRY_RUN:-}

stamp_of() { cat pyproject.toml "$@" | sha256sum | cut -d' ' -f1; }
run() { if [ -n "$DRY" ]; then echo "+ $*"; else "$@"; fi; }
pinned() { grep "^$1==" constraints/modern.txt | cut -d= -f3; }  # the version constraints/modern.txt pins

cuda_major() {  # the CUDA major version the NVIDIA driver supports, or nothing without a driver
    case "${SENSITIVITY_GPU:-auto}" in no) return ;; esac
    command -v nvidia-smi >/dev/null 2>&1 || return 0
    nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9]*' | grep -o '[0-9]*$' | head -1 || true
}

ensure_venv() {  # ensure_venv DIR
    if [ ! -x "$1/bin/python" ]; then
        "$PYTHON" -m venv "$1"
    fi
    "$1/bin/python" -m pip install -q --upgrade "pip>=26" "setuptools<81" wheel
}

setup_modern() {
    local stamp cuda; stamp=$(stamp_of constraints/modern.txt constraints/modern-requirements.txt)
    cuda=$(cuda_major)
    if [ -n "$cuda" ] && [ "$cuda" -lt 12 ]; then
        echo "setup: the NVIDIA driver supports CUDA $cuda only; GPU builds need CUDA 12 or later: CPU builds" >&2
        cuda=""
    fi
    [ -z "$cuda" ] || stamp="$stamp-cuda$cuda"
    if [ -z "$DRY" ] && [ -f .venv/.setup-stamp ] && [ "$(cat .venv/.setup-stamp)" = "$stamp" ]; then
        echo "setup: .venv is current"; return
    fi
    echo "setup: building .venv (modern)"
    run ensure_venv .venv
    run .venv/bin/pip install -q -c constraints/modern.txt \
        -r constraints/modern-requirements.txt -e ".[all]"
    if [ -n "$cuda" ]; then
        echo "setup: NVIDIA driver found (CUDA $cuda): GPU builds of torch, tensorflow and jax"
        run .venv/bin/pip uninstall -q -y tensorflow-cpu
        # torch===: exactly PyPI's (CUDA) build, never a local +cpu wheel of the same version
        run .venv/bin/pip install -q -c constraints/modern.txt "torch===$(pinned torch)" \
            "tensorflow[and-cuda]==$(pinned tensorflow-cpu)" "jax[cuda$([ "$cuda" -ge 13 ] && echo 13 || echo 12)]==$(pinned jax)"
    fi
    [ -n "$DRY" ] || echo "$stamp" > .venv/.setup-stamp
}

setup_legacy() {
    local stamp; stamp=$(stamp_of constraints/legacy.txt constraints/legacy-requirements.txt constraints/legacy-build.txt)
    if [ -z "$DRY" ] && [ -f .venv-legacy/.setup-stamp ] && [ "$(cat .venv-legacy/.setup-stamp)" = "$stamp" ]; then
        echo "setup: .venv-legacy is current"; return
    fi
    echo "setup: building .venv-legacy (legacy)"
    run ensure_venv .venv-legacy
    run .venv-legacy/bin/pip install -q -c constraints/legacy.txt \
        --build-constraint constraints/legacy-build.txt \
        -r constraints/legacy-requirements.txt -e ".[dev]"
    [ -z "$(cuda_major)" ] || echo "setup: .venv-legacy stays CPU-only: mxnet, chainer and Theano have no GPU build" \
        "for current CUDA (sensitivity frameworks says why)"
    [ -n "$DRY" ] || echo "$stamp" > .venv-legacy/.setup-stamp
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
