#!/usr/bin/env bash
# Packaging check: build the sdist, build a wheel from that sdist alone, install the wheel into a
# fresh venv that gets only the wheel's dependencies, and run `pyfxprof profile` there.
# The builds use .venv's build tools (no isolation: measured under load, sdist 4 s and wheel
# 120 s, against 31 s and 183 s with isolated build environments fetched from the index).
# The venv is made with uv (requirements-dev.txt), which links packages from its cache: pip
# unpacking torch and its CUDA libraries took 5 min; uv takes about 1.5 min once, then seconds.
# uv does not read pip's configuration: the package indexes pip is configured with are passed on.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage() { echo "check_package: $1 (${SECONDS}s)"; }

pip_setting() {  # a pip setting from the environment or pip's configuration files, else ""
  local env_name="PIP_$(echo "$1" | tr 'a-z-' 'A-Z_')"
  if [ -n "${!env_name:-}" ]; then echo "${!env_name}"; return; fi
  "$py" -m pip config get "global.$1" 2>/dev/null | tr '\n' ' ' || true
}
export UV_FIND_LINKS="${UV_FIND_LINKS:-$(pip_setting find-links | xargs | tr ' ' ',')}"
export UV_EXTRA_INDEX_URL="${UV_EXTRA_INDEX_URL:-$(pip_setting extra-index-url | xargs)}"
[ -n "$UV_FIND_LINKS" ] || unset UV_FIND_LINKS
[ -n "$UV_EXTRA_INDEX_URL" ] || unset UV_EXTRA_INDEX_URL

stage "building the sdist"
"$py" -m build --sdist --no-isolation --outdir "$work/dist" . > "$work/sdist.log" 2>&1 || { cat "$work/sdist.log"; exit 1; }
sdist=$(ls "$work"/dist/pyfxprof-*.tar.gz)
tar tzf "$sdist" > "$work/sdist.txt"
for needed in CMakeLists.txt csrc/python_module.cpp LICENSE pyfxprof/py.typed pyfxprof/_C.pyi; do
  grep -q "^pyfxprof-[^/]*/$needed$" "$work/sdist.txt" || { echo "sdist lacks $needed"; exit 1; }
done

stage "building a wheel from the sdist"
"$py" -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$work/wheel" "$sdist" > "$work/wheel.log" 2>&1 \
  || { cat "$work/wheel.log"; exit 1; }

"$py" - "$work"/wheel/pyfxprof-*.whl <<'PY' || exit 1
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
needed = ["pyfxprof/py.typed", "pyfxprof/_C.pyi", "pyfxprof/views/flamegraph_script.js"]
missing = [n for n in needed if n not in names]
missing += [] if any(n.startswith("pyfxprof/_C.") and n.endswith(".so") for n in names) else ["_C"]
missing += [] if any(n.endswith("licenses/LICENSE") for n in names) else ["LICENSE"]
sys.exit(f"the wheel lacks {missing}" if missing else 0)
PY

stage "installing the wheel and its dependencies into a fresh venv"
grep '^torch==' requirements-dev.txt > "$work/constraints.txt"  # the pinned torch
.venv/bin/uv venv --quiet --python "$py" "$work/venv"
.venv/bin/uv pip install --quiet --python "$work/venv/bin/python" \
  --constraint "$work/constraints.txt" "$work"/wheel/pyfxprof-*.whl

stage "running pyfxprof profile from the fresh venv"
(cd "$work" && venv/bin/pyfxprof profile --input 1x3x32x32 --runs 3 --warmup 1 --top 3 --threads 1) \
  > "$work/profile.log" 2>&1 || { cat "$work/profile.log"; exit 1; }
grep -q "resnet18 on cpu" "$work/profile.log" || { cat "$work/profile.log"; exit 1; }
stage "done"
