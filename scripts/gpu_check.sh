#!/usr/bin/env bash
# The prepared device check (docs/gpu.md): build pyfxprof._C in place against this machine's
# torch, run the GPU tests and the device-path tests, benchmarks/bench_gpu.py and the GPU steps
# of scripts/gpu_check.py, and write one report, $OUT/gpu_check.md. Without a GPU every GPU step
# is reported skipped and the rest must pass (CI runs it so). Exit 1 when a step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-build/gpu_check}"
mkdir -p "$OUT"
export OUT
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
REPORT="$OUT/gpu_check.md"
STEP_LIMIT="${GPU_CHECK_STEP_LIMIT:-240}"
failed=0
started_all=$(date +%s)
{
  echo "# pyfxprof device check"
  echo
  echo "$(date -u '+%Y-%m-%d %H:%M UTC') · $(uname -m) · $(nproc) cores · commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo
  echo "| step | result | seconds |"
  echo "| --- | --- | --- |"
} > "$REPORT"
: > "$OUT/steps.log"

# step NAME COMMAND...: runs COMMAND with a time limit, its output kept for the report.
step() {
  local name="$1"; shift
  local start rc result
  start=$(date +%s)
  timeout "$STEP_LIMIT" "$@" > "$OUT/$name.txt" 2>&1
  rc=$?
  case $rc in
    0) result="passed";;
    3) result="skipped ($(grep -m1 '^skipped' "$OUT/$name.txt" | cut -c10-))";;
    124) result="FAILED (over ${STEP_LIMIT} s)"; failed=1;;
    *) result="FAILED (exit $rc)"; failed=1;;
  esac
  echo "| $name | $result | $(( $(date +%s) - start )) |" >> "$REPORT"
  { echo; echo "## $name: $result"; echo; echo '```'; tail -c 20000 "$OUT/$name.txt"; echo '```'; } >> "$OUT/steps.log"
  rm -f "$OUT/$name.txt"
  echo "gpu_check: $name: $result" >&2
}

step build "$PYTHON" setup.py build_ext --inplace
step versions "$PYTHON" scripts/gpu_check.py versions  # after the build: it reads pyfxprof._C
step device_path_tests "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_device_timing.py tests/timing/test_nvtx.py
for gpu_step in gpu_tests bench_gpu tables compiled cuda_graphs loop_gpt2 nvtx_on_device; do
  step "$gpu_step" "$PYTHON" scripts/gpu_check.py "$gpu_step"
done
{ echo; echo "total $(( $(date +%s) - started_all )) s"; cat "$OUT/steps.log"; } >> "$REPORT"
rm -f "$OUT/steps.log"
echo "gpu_check: report in $REPORT" >&2
exit $failed
