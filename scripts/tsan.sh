#!/usr/bin/env bash
# The ThreadSanitizer pass (issue 11): the engine, the UI library, tst_ui_controller and
# tst_ui_models built with -fsanitize=thread into build-tsan/, apart from the normal build,
# then both suites run offscreen: runs that start, pause, resume, take setting changes,
# stop, are superseded, and are closed (the controller destroyed) while they train, with
# the trainer on its own thread and the CPU backend's pool beside it; and the runs folder
# listed on a thread of its own (with two reader threads) while the model fills, and
# closed while it is listed (issue 37).
# Qt is not instrumented: reports that only Qt's own synchronisation would explain are
# suppressed in scripts/tsan.supp, each with its reason; nothing of ours is. Exits
# non-zero when the suite fails or ThreadSanitizer reports anything not suppressed.
#   scripts/tsan.sh [extra arguments for tst_ui_controller, e.g. a test function]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-tsan"
flags="-fsanitize=thread -fno-omit-frame-pointer"
# -O1 with line tables only (-g1), as the ASan pass: reports keep their file:line stacks,
# and the build, most of this pass, takes less time than -O2 -g.
optimise="-O1 -g1 -DNDEBUG"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimise" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimise" \
  -DPLAB_WITH_CUDA=OFF -DPLAB_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=thread" -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
# plab too: tst_ui_models has it write a record into the watched runs folder from another
# process.
cmake --build "$build" --target tst_ui_controller tst_ui_models plab -j"$(nproc)"

log="$build/tsan-report.log"
rm -f "$log".*
# exitcode: a report, even one printed while the suite passes, fails the pass.
# die_after_fork=0: twoInstancesKeepBothRuns starts two copies of the suite through
# QProcess (fork, then exec); without it TSan ends the suite with "starting new threads
# after multi-threaded fork is not supported" (exit 66, no report: CI of 1822b25).
export TSAN_OPTIONS="suppressions=$root/scripts/tsan.supp halt_on_error=0 exitcode=66 second_deadlock_stack=1 history_size=4 die_after_fork=0 log_path=$log"
status=0
( cd "$build/tests" && QT_QPA_PLATFORM=offscreen ./tst_ui_controller "$@" ) || status=$?
( cd "$build/tests" && QT_QPA_PLATFORM=offscreen ./tst_ui_models ) || status=$?
reports=$(cat "$log".* 2>/dev/null | grep -c "^WARNING: ThreadSanitizer" || true)
if [ "$reports" -gt 0 ]; then
  cat "$log".*
  echo "tsan.sh: $reports ThreadSanitizer report(s), in $log.*" >&2
  [ "$status" -ne 0 ] || status=66
fi
if [ "$status" -ne 0 ]; then
  echo "tsan.sh: FAILED (exit $status)" >&2
else
  echo "tsan.sh: clean"
fi
exit "$status"
