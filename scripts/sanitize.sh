#!/usr/bin/env bash
# The sanitizer pass (issue 11): the engine, plab and the engine's test suites built with
# AddressSanitizer and UndefinedBehaviorSanitizer (no recovery: the first finding fails the
# suite), then every suite but the UI's, the GPU's and the lesson suite run, and the fault
# tests with the sanitized plab. Leaks count as failures (LeakSanitizer). Builds into
# build-asan/, apart from the normal build. `./test.sh` runs it after the normal suites.
#   scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S "$root" -B "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPLAB_BUILD_GUI=OFF -DPLAB_BUILD_BENCH=OFF -DPLAB_WITH_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$root/build-asan" -j"$(nproc)"
cd "$root/build-asan"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --output-on-failure -j"$(nproc)" -LE lesson -E "^tst_cuda_" "$@"
