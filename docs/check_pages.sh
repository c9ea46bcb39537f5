#!/bin/sh
# Render pages of the built site in headless Chromium and save screenshots, so that a person
# can look at what a reader sees: the home page, the user-guide index, the GAM's page, the
# gallery, a benchmark page with a wide table and one API page.
# Usage: sh docs/check_pages.sh [html dir] [output dir]   (make docs-check; not part of CI)
# Needs Debian's chromium (apt-get install -y chromium).
set -eu
HTML=${1:-docs/_build/html}
OUT=${2:-docs/_build/screenshots}
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
    echo "docs-check: chromium not found (apt-get install -y chromium)" >&2
    exit 1
fi
mkdir -p "$OUT"
HTML=$(cd "$HTML" && pwd)
OUT=$(cd "$OUT" && pwd)
for page in index user_guide/index user_guide/stump_forest_gam auto_examples/index \
    benchmarks/f16_high_frame_rate_video api/generated/sklearn_icml.gam.StumpForestGAMClassifier; do
    file="$HTML/$page.html"
    test -f "$file" || { echo "docs-check: $file is missing (run make docs)" >&2; exit 1; }
    name=$(echo "$page" | tr '/' '_')
    profile=$(mktemp -d)
    # a fresh profile each time; no network, sync, updates or GPU: the page is a local file
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" --hide-scrollbars --window-size=1400,2200 \
        --virtual-time-budget=5000 --screenshot="$OUT/$name.png" "file://$file" \
        > "$OUT/$name.log" 2>&1 || { echo "docs-check: chromium failed on $page" >&2; rm -rf "$profile"; exit 1; }
    rm -rf "$profile"
    test -s "$OUT/$name.png" || { echo "docs-check: no screenshot of $page" >&2; exit 1; }
    echo "docs-check: $OUT/$name.png"
done
