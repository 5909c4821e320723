#!/usr/bin/env bash
# Render pyfxprof's outputs in headless Chromium to PNGs you can look at:
#   scripts/screenshots.sh OUT_DIR FILE [FILE...]   (SVG, HTML, anything Chromium opens)
# Needs the Debian package "chromium" (apt-get install -y chromium). Width 1400 px; the height
# is WINDOW_HEIGHT (default 1000).
set -euo pipefail
out_dir=$1; shift
mkdir -p "$out_dir"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ]; then echo "no chromium found: apt-get install -y chromium" >&2; exit 2; fi
for file in "$@"; do
  profile_dir=$(mktemp -d)
  name=$(basename "$file"); png="$out_dir/${name%.*}.png"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile_dir" --hide-scrollbars --screenshot="$png" \
    --window-size=1400,"${WINDOW_HEIGHT:-1000}" "file://$(realpath "$file")" >/dev/null 2>&1
  rm -rf "$profile_dir"
  echo "wrote $png"
done
