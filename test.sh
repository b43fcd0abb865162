#!/usr/bin/env bash
# The whole test suite: the set-up of run.sh plus what only the tests use, then every CTest suite, then the
# sanitizer pass. Suites that skip (the CUDA agreement tests without a GPU) are listed with
# their reason.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh" --tests
cd "$root/build"
status=0
ctest --output-on-failure -j"$(nproc)" "$@" || status=$?
if grep -h "^SKIP   : .*initTestCase()" Testing/Temporary/LastTest.log >/dev/null 2>&1; then
  echo "Skipped suites and why:"
  grep -h "^SKIP   : .*initTestCase()" Testing/Temporary/LastTest.log | sed 's/^SKIP   : /  /'
fi
# The sanitizer passes: the engine, plab, the app and their suites under
# ASan+UBSan+LSan (one build); the app's controller under TSan.
# PLAB_NO_SANITIZE=1 leaves them out (a quick local run); CI runs them.
if [ "${PLAB_NO_SANITIZE:-0}" != 1 ]; then
  echo "Sanitizer pass (scripts/sanitize.sh):"
  "$root/scripts/sanitize.sh" || status=$?
  echo "ThreadSanitizer pass (scripts/tsan.sh):"
  "$root/scripts/tsan.sh" || status=$?
fi
exit "$status"
