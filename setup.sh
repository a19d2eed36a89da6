#!/usr/bin/env bash
# rlvr setup: creates .venv/ in the repository root and installs rlvr (the `rlvr` command) with
# its test tools. On a machine without an NVIDIA GPU it pins the CPU build torch==2.13.0, so it
# never downloads a multi-GB CUDA build. Installs bubblewrap (sandbox for code verifiers) and Coq
# (the coq proof verifier) when running as root with apt-get; otherwise says how to.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: rlvr needs Python >= 3.11; $PYTHON is $("$PYTHON" -V 2>&1). Set PYTHON=/path/to/python3.11" >&2
    exit 2
fi

# apt_install PKG WHAT FOR IF_FAILED: install a missing system package with apt-get when running as
# root, else say how to; never fatal, since only some parts need it. WHAT says what PKG is, FOR what
# needs it, IF_FAILED what happens without it.
apt_install() {
    local pkg=$1 what=$2 for_what=$3 if_failed=$4
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing $pkg ($what)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null) ||
            echo "setup: warning: could not install $pkg; $if_failed" >&2
    else
        echo "setup: note: $pkg is missing; install it (e.g. 'sudo apt-get install $pkg') for $for_what" >&2
    fi
}

if ! command -v bwrap >/dev/null 2>&1; then
    apt_install bubblewrap "the sandbox for code verifiers" "code verifiers" "code verifiers will refuse to run"
fi

if ! command -v coqtop >/dev/null 2>&1; then
    apt_install coq "the Coq proof assistant" "the coq proof verifier" "coq proofs will be unavailable"
fi

if ! command -v chromium >/dev/null 2>&1; then
    apt_install chromium "headless browser for the lab's browser tests" "the lab's browser test" \
        "the lab's browser test will be skipped"
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    TORCH=${RLVR_TORCH:-torch}
else
    TORCH=${RLVR_TORCH:-torch==2.13.0}  # the CPU build
fi
# torch through pip, which honours the machine's pip settings (a local CPU wheel, find-links); the
# rest through uv, which keeps that torch and resolves the same versions as pip in under half the
# time (78 s against 176 s for a fresh .venv without caches); pip alone if uv cannot be had.
# --compile-bytecode writes the .pyc files as pip does: where PYTHONDONTWRITEBYTECODE is set, a
# venv without them compiles every imported module again in every process (runs 25% slower here).
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH"
if .venv/bin/python -m pip install --quiet --disable-pip-version-check uv &&
    .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python -e ".[dev]"; then
    :
else
    echo "setup: note: uv failed; installing with pip (slower)" >&2
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
fi
echo "setup: done. Try: .venv/bin/rlvr train   (or: source .venv/bin/activate; rlvr train)"
