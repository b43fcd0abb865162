#!/usr/bin/env bash
# The whole test suite: the same set-up as run.sh, then every CTest suite. Suites that
# skip (the CUDA agreement tests without a GPU) are listed at the end with their reason.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"
cd "$root/build"
status=0
ctest --output-on-failure -j"$(nproc)" "$@" || status=$?
if grep -h "^SKIP   : .*initTestCase()" Testing/Temporary/LastTest.log >/dev/null 2>&1; then
  echo "Skipped suites and why:"
  grep -h "^SKIP   : .*initTestCase()" Testing/Temporary/LastTest.log | sed 's/^SKIP   : /  /'
fi
exit "$status"
