#!/usr/bin/env bash
# Creates the Python environment that bench/distributed_comm_bench.py runs in: a venv under
# build-cache/venv-distributed-ucxx (git-ignored) with Dask distributed, distributed-ucxx (its UCX comm
# backend, ucxx:// and ucx://) and numpy, at the versions below, which were checked to work on a
# CPU-only Debian 12 VM (UCX from the libucx-cu13 wheel; no GPU or CUDA driver needed). About 450 MB.
#
# Idempotent: does nothing when the venv already holds these versions (a stamp file records them).
# Python: $PYTHON if set, else the first of python3, python3.13, python3.12, python3.11 and
# /usr/bin/python3 that can create a venv with pip (Debian's python3 needs the python3-venv package for
# that; a pyenv python3 on PATH has it built in). Output goes to stderr; prints nothing on stdout.
#
#   bench/setup-distributed-ucxx.sh
#   PYTHON=/usr/bin/python3.11 bench/setup-distributed-ucxx.sh
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
VENV="$ROOT/build-cache/venv-distributed-ucxx"
# The top-level packages, and the RAPIDS/UCX ones under them, pinned; libucx-cu13 < 1.22 is what
# libucxx-cu13 0.52 accepts.
PACKAGES=(
    "distributed-ucxx-cu13==0.52.0"
    "ucxx-cu13==0.52.0"
    "libucxx-cu13==0.52.0"
    "libucx-cu13==1.21.0"
    "distributed==2026.7.1"
    "dask==2026.7.1"
    "numpy==2.4.6"
)
STAMP="$VENV/.ucx4j-bench-packages"
WANT=$(printf '%s\n' "${PACKAGES[@]}")

log() { echo "setup-distributed-ucxx: $*" >&2; }

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] &&
    "$VENV/bin/python" -c 'import distributed, distributed_ucxx, ucxx, numpy' 2>/dev/null; then
    exit 0
fi

venv_works() { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }

if ! venv_works; then
    rm -rf "$VENV"
    mkdir -p "$ROOT/build-cache"
    candidates=()
    if [ -n "${PYTHON:-}" ]; then candidates=("$PYTHON"); else
        candidates=(python3 python3.13 python3.12 python3.11 /usr/bin/python3)
    fi
    made=
    for py in "${candidates[@]}"; do
        command -v "$py" >/dev/null 2>&1 || continue
        "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || continue
        log "creating $VENV with $(command -v "$py") ($("$py" --version 2>&1))"
        if "$py" -m venv "$VENV" >&2 && venv_works; then made=$py; break; fi
        log "$py cannot create a venv with pip (Debian: apt-get install python3-venv)"
        rm -rf "$VENV"
    done
    if [ -z "$made" ]; then
        log "no Python >= 3.10 that can create a venv was found (Debian 12: apt-get install python3-venv; or set PYTHON=...)"
        exit 1
    fi
fi

log "installing ${PACKAGES[*]} into $VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q "${PACKAGES[@]}" >&2
"$VENV/bin/python" -c 'import distributed, distributed_ucxx, ucxx, numpy' >&2
printf '%s\n' "$WANT" >"$STAMP"
log "ready: $("$VENV/bin/python" --version 2>&1), $(printf '%s ' "${PACKAGES[@]}")"
