#!/usr/bin/env bash
# The compatibility stage: for the oldest, the GPU image's and the newest supported torch (each
# with its own Python), a venv outside the clone, pyfxprof built and installed into it from this
# clone, and tests/test_compat_features.py (the nine features) run against the installed package.
# Venvs live in $PYFXPROF_COMPAT_CACHE (default ~/.cache/pyfxprof-compat/<torch>-<python>) and are
# reused between runs. They are made with uv, which knows no pip constraint (this machine's pip
# caps torch at 2.14.1; the cap is not touched) and links packages from its cache.
# `bash scripts/compat_stage.sh prepare` only makes the venvs (all at once: a fresh machine's
# downloads overlap).
set -euo pipefail
shopt -s inherit_errexit  # a failed install inside $(ensure_venv ...) stops the stage
cd "$(dirname "$0")/.."
repo=$PWD
cache="${PYFXPROF_COMPAT_CACHE:-$HOME/.cache/pyfxprof-compat}"
uv="${PYFXPROF_UV:-$repo/.venv/bin/uv}"
# torch-python pairs: the oldest supported, the lent GPU machine's image, the newest
pairs="${PYFXPROF_COMPAT_PAIRS:-2.8.0-3.10 2.11.0-3.12 2.15.0-3.13}"
packages=(numpy pandas scipy matplotlib tqdm pytest "setuptools>=77" wheel "pybind11>=2.12"
          "cmake>=3.18" ninja)
stage() { echo "compat_stage: $1 (${SECONDS}s)"; }

find_python() {  # the interpreter for Python $1 (pyenv's, else one on PATH), or fail in one line
  local found
  found=$(ls -d "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/"$1".*/bin/python"$1" \
          2>/dev/null | sort -V | tail -1 || true)
  [ -n "$found" ] || found=$(command -v "python$1" || true)
  [ -n "$found" ] && "$found" -c "" 2>/dev/null \
    || { echo "compat_stage: Python $1 not found (install it, e.g. pyenv install $1)" >&2; exit 1; }
  echo "$found"
}

uv_sources() {  # pass pip's configured local wheel folders and indexes on to uv
  local links indexes
  links=$(python3 -m pip config get global.find-links 2>/dev/null | xargs || true)
  indexes=$(python3 -m pip config get global.extra-index-url 2>/dev/null | xargs || true)
  export UV_FIND_LINKS="${UV_FIND_LINKS:-${PIP_FIND_LINKS:-$links}}"
  export UV_EXTRA_INDEX_URL="${UV_EXTRA_INDEX_URL:-$indexes}"
  UV_FIND_LINKS=$(echo "$UV_FIND_LINKS" | tr ' ' ',')
  [ -n "$UV_FIND_LINKS" ] || unset UV_FIND_LINKS
  [ -n "$UV_EXTRA_INDEX_URL" ] || unset UV_EXTRA_INDEX_URL
}

ensure_venv() {  # the venv for torch $1 on Python $2, made once; prints its folder
  local venv="$cache/$1-$2" want="torch==$1 ${packages[*]}"
  if [ "$(cat "$venv/.pyfxprof-compat" 2>/dev/null)" != "$want" ]; then
    rm -rf "$venv"
    "$uv" venv --quiet --python "$(find_python "$2")" "$venv" >&2
    # the best match across indexes: this machine's local indexes hold only some torch releases
    "$uv" pip install --quiet --python "$venv/bin/python" --index-strategy unsafe-best-match \
      "torch==$1" "${packages[@]}" >&2
    echo "$want" > "$venv/.pyfxprof-compat"
  fi
  echo "$venv"
}

run_pair() {  # build and install pyfxprof into the venv of torch $1 / Python $2, run the subset
  local venv work
  venv=$(ensure_venv "$1" "$2")
  stage "torch $1, Python $2: building pyfxprof into $venv"
  work=$(mktemp -d)
  "$uv" pip install --quiet --no-cache --python "$venv/bin/python" --no-build-isolation --no-deps \
    --reinstall-package pyfxprof "$repo" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
  # the tests run from a copy, so `import pyfxprof` finds the installed package, not the clone's
  cp -r "$repo/tests" "$repo/pyproject.toml" "$work/"
  stage "torch $1, Python $2: tests/test_compat_features.py"
  (cd "$work" && PATH="$venv/bin:$PATH" python -m pytest -q -p no:cacheprovider \
     tests/test_compat_features.py) || { rm -rf "$work"; exit 1; }
  rm -rf "$work"
}

mkdir -p "$cache"
uv_sources
pids=()  # the venvs at once, their downloads overlapping; each one's output in $cache/<pair>.log
for pair in $pairs; do
  ensure_venv "${pair%-*}" "${pair#*-}" > "$cache/$pair.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || { cat "$cache"/*.log >&2; echo "compat_stage: a venv failed (above)" >&2; exit 1; }
done
stage "venvs ready in $cache"
[ "${1:-}" != prepare ] || exit 0
for pair in $pairs; do
  run_pair "${pair%-*}" "${pair#*-}"
done
stage "done"
