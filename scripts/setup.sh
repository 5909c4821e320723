#!/usr/bin/env bash
# Creates .venv with the pinned stack and installs pyfxprof (building pyfxprof._C) into it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
.venv/bin/python -m pip install --quiet --no-build-isolation -e .
