#!/usr/bin/env bash
# rlvr setup: creates .venv/ in the repository root and installs rlvr (the `rlvr` command) with
# its test tools. On a machine without an NVIDIA GPU it pins the CPU build torch==2.13.0, so it
# never downloads a multi-GB CUDA build. Installs bubblewrap (sandbox for code verifiers) when
# running as root with apt-get; otherwise says how to.
set -euo pipefail
cd "$(dirname "$0")"

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "setup: rlvr needs Python >= 3.11; $PYTHON is $("$PYTHON" -V 2>&1). Set PYTHON=/path/to/python3.11" >&2
    exit 2
fi

if ! command -v bwrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing bubblewrap (the sandbox for code verifiers)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null) ||
            echo "setup: warning: could not install bubblewrap; code verifiers will refuse to run" >&2
    else
        echo "setup: note: bubblewrap is missing; install it (e.g. 'sudo apt-get install bubblewrap') for code verifiers" >&2
    fi
fi

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: installing chromium (headless browser for the lab's browser tests)"
        (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) ||
            echo "setup: warning: could not install chromium; the lab's browser test will be skipped" >&2
    else
        echo "setup: note: chromium is missing; install it (e.g. 'sudo apt-get install chromium') for the lab's browser test" >&2
    fi
fi

if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
    TORCH=${RLVR_TORCH:-torch}
else
    TORCH=${RLVR_TORCH:-torch==2.13.0}  # the CPU build
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
echo "setup: done. Try: .venv/bin/rlvr train   (or: source .venv/bin/activate; rlvr train)"
