#!/usr/bin/env bash
# The whole test suite: the same set-up as run.sh, then every CTest suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
cd "$root/build"
ctest --output-on-failure -j"$(nproc)" "$@"
