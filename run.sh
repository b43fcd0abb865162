#!/usr/bin/env bash
# The main job: set up (packages, data, Release build), then train the default recipe
# on the default data, printing progress and the final test accuracy. Extra arguments
# go to `plab train` (e.g. ./run.sh --recipe amp-fp16).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
mkdir -p "$root/runs"
exec "$root/build/app/plab" train --out "$root/runs/latest.json" "$@"
