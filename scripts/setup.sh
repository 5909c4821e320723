#!/usr/bin/env bash
# Creates .venv with the pinned stack and installs pyfxprof (building pyfxprof._C) into it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  # The pinned stack takes about 6 GB in .venv (torch's CUDA build) and the packaging check
  # 6 GB more in uv's cache: say so up front, not only as pip's "No space left on device".
  free_gb=$( (df -Pk . || true) | awk 'NR == 2 {print int($4 / 1048576)}')
  if [ -n "$free_gb" ] && [ "$free_gb" -lt 12 ]; then
    echo "setup: only ${free_gb} GB free here; the pinned stack needs about 12 GB (.venv and" \
         "uv's cache): free some space if the install fails" >&2
  fi
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet -r requirements-dev.txt
.venv/bin/python -m pip install --quiet --no-build-isolation -e .
