#!/bin/sh
# Screenshots of every shipped lesson in presentation mode after Reveal, at 1600x1000, as
# docs/LESSONS.md shows them: each lesson is run for real (seed 1) under Xvfb, its
# explanation revealed when its runs finish, and the window saved 3 s later.
#   scripts/lesson-screenshots.sh [BUILD_DIR] [OUT_DIR]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
out=${2:-$here/docs/lessons}
mkdir -p "$out"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
for lesson in "$here"/resources/lessons/*.json; do
    stem=$(basename "$lesson" .json)
    echo "lesson $stem" >&2
    xvfb-run -a -s "-screen 0 1600x1000x24" "$build/app/precision-lab" -geometry 1600x1000+0+0 \
        --runs-dir "$runs/$stem" --lesson "$lesson" --run-lesson --reveal --presentation \
        --screenshot "$out/$stem.png" --screenshot-delay 3
done
