#!/usr/bin/env bash
# Regenerates the lab's pictures in docs/lab/ (shown by README.md and docs/lab.md) from the lab as
# it is: the headless-Chromium tests in tests/lab/test_browser.py take the screenshots and, with
# RLVR_LAB_SCREENSHOTS set, copy them here. Needs ./setup.sh (Playwright and the system chromium).
set -euo pipefail
cd "$(dirname "$0")/../.."
RLVR_LAB_SCREENSHOTS=docs/lab .venv/bin/python -m pytest -q tests/lab/test_browser.py "$@"
