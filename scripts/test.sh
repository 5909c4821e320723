#!/usr/bin/env bash
# Runs every test: the C++ tests (ctest, including a ThreadSanitizer stress build), the device
# check's rehearsal (scripts/gpu_check.sh), the packaging check (sdist -> wheel -> fresh venv ->
# pyfxprof profile), the compatibility stage (scripts/compat_stage.sh), then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p build
cmake -S . -B build/ctest -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPYFXPROF_BUILD_PYTHON=OFF -DPYFXPROF_BUILD_TESTS=ON -DPYFXPROF_TSAN=ON -DPYFXPROF_WERROR=ON \
  > build/ctest-configure.log || { cat build/ctest-configure.log; exit 1; }
cmake --build build/ctest
ctest --test-dir build/ctest --output-on-failure
OUT=build/gpu_check bash scripts/gpu_check.sh  # the device check's rehearsal: GPU steps skipped
bash scripts/check_package.sh
bash scripts/compat_stage.sh  # torch 2.8, 2.11 and 2.15 in venvs of their own (docs/versions.md)
.venv/bin/python -m pytest -q "$@"
