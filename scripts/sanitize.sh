#!/usr/bin/env bash
# The sanitizer passes (issue 11), each built with AddressSanitizer and
# UndefinedBehaviorSanitizer (no recovery: the first finding fails the suite), leaks
# counting as failures (LeakSanitizer), apart from the normal build.
# - The engine pass (the default; `./test.sh` runs it after the normal suites): the engine,
#   plab and the engine's test suites, built into build-asan/, then every suite but the
#   UI's, the GPU's and the lesson suite, and the fault tests with the sanitized plab.
# - The UI pass (--ui; `./test.sh` runs it too): the app (precision-lab) and the UI suites
#   (tst_ui_*), built into build-asan-ui/, then every UI suite and the app once,
#   offscreen. No leak is suppressed.
#   scripts/sanitize.sh [extra ctest arguments]
#   scripts/sanitize.sh --ui [extra ctest arguments]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ui=0
if [ "${1:-}" = "--ui" ]; then
  ui=1
  shift
fi
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
configure() {   # configure BUILD_DIR [cmake options]
  local build="$1"
  shift
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPLAB_BUILD_BENCH=OFF -DPLAB_WITH_CUDA=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_MODULE_LINKER_FLAGS="-fsanitize=address,undefined" \
    "$@" >/dev/null
}
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

if [ "$ui" = 0 ]; then
  configure "$root/build-asan" -DPLAB_BUILD_GUI=OFF
  cmake --build "$root/build-asan" -j"$(nproc)"
  cd "$root/build-asan"
  ctest --output-on-failure -j"$(nproc)" -LE lesson -E "^tst_cuda_" "$@"
  exit 0
fi

build="$root/build-asan-ui"
configure "$build" -DPLAB_BUILD_GUI=ON
suites=()
for src in "$root"/tests/tst_ui_*.cpp; do suites+=("$(basename "$src" .cpp)"); done
cmake --build "$build" -j"$(nproc)" --target precision-lab "${suites[@]}"
export QT_QPA_PLATFORM=offscreen
cd "$build"
ctest --output-on-failure -j"$(nproc)" -R "^tst_ui_" "$@"
# The app itself, once: the window opens with the format explorer and presentation mode,
# saves a screenshot and quits. Its settings, runs and data live in a folder of its own.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
XDG_CONFIG_HOME="$scratch/config" XDG_DATA_HOME="$scratch/data" HOME="$scratch" \
  ./app/precision-lab --runs-dir "$scratch/runs" --data-dir "$scratch" --presentation --explore 0.1 \
  --screenshot "$scratch/app.png" --screenshot-delay 0
test -s "$scratch/app.png"
echo "sanitize.sh --ui: the UI suites and the app are clean"
