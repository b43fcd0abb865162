#!/bin/sh
# Builds what a GPU session runs and packs it for the device machine, which has the CUDA
# toolkit, cuDNN (PyTorch's) and PyTorch but neither Qt, OpenBLAS nor the rest of our
# Debian libraries: the CUDA test suites, the benchmark, plab, the app and the plugin
# (built for Hopper only, sm_90, to keep the build short), plus every shared library they
# need that is not glibc or CUDA's, Qt's offscreen platform plugin, a font, and the
# 10,000 MNIST digits the set-up installed, compressed under .gpu/ (git-ignored) to stay
# inside the device's 64 MiB transfer limit. Then, on the device: bench/gpu_session.sh.
#
#     scripts/gpu-bundle.sh            # here, after scripts/setup.sh
#     (device) run command "sh bench/gpu_session.sh", carry [".gpu"]
#
# --data copies the full Fashion-MNIST (30 MB of gzip that compresses no further) into
# .gpudata/ instead, for the `walkthrough` phase: with the kit it would pass the device's
# 64 MiB, so it travels alone first ("sh bench/gpu_session.sh stagedata", carry
# [".gpudata"]), and the next call, on the same warm machine, carries the kit.
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--data" ]; then
  data="${XDG_DATA_HOME:-$HOME/.local/share}/precision-lab/data/fashion-mnist"
  [ -d "$data" ] || { echo "gpu-bundle.sh: no $data (plab data fetch --dataset fashion-mnist)" >&2; exit 1; }
  rm -rf .gpudata && mkdir -p .gpudata && cp -r "$data" .gpudata/
  du -sh .gpudata
  exit 0
fi
build=build-gpu
targets="plab_cuda tst_cuda_backend tst_cuda_fp8 tst_cuda_op_math tst_cuda_kernel_math tst_cuda_training tst_placement plab_bench plab precision-lab"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLAB_WITH_CUDA=ON -DPLAB_CUDA_ARCHITECTURES=90-real >/dev/null
cmake --build "$build" -j"$(nproc)" --target $targets

rm -rf .gpu && mkdir -p .gpu/stage/bin .gpu/stage/lib .gpu/stage/plugins/platforms .gpu/stage/fonts .gpu/stage/data
for t in tst_cuda_backend tst_cuda_fp8 tst_cuda_op_math tst_cuda_kernel_math tst_cuda_training tst_placement; do
  cp "$build/tests/$t" .gpu/stage/bin/
done
cp "$build/bench/plab_bench" "$build/app/libplab_cuda.so" "$build/app/plab" "$build/app/precision-lab" .gpu/stage/bin/
qtplugins=$(qtpaths6 --query QT_INSTALL_PLUGINS 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/qt6/plugins)
cp "$qtplugins/platforms/libqoffscreen.so" .gpu/stage/plugins/platforms/
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf \
   /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf .gpu/stage/fonts/
data="${XDG_DATA_HOME:-$HOME/.local/share}/precision-lab/data/mnist-10k"
[ -d "$data" ] && cp -r "$data" .gpu/stage/data/

# Shared libraries of everything staged, except glibc's and CUDA's (the device has its own).
for f in .gpu/stage/bin/* .gpu/stage/plugins/platforms/*; do ldd "$f" 2>/dev/null; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so|/libcu|/libnv' |
  while read -r lib; do cp -L "$lib" .gpu/stage/lib/; done
# The device's Nsight Systems importer (the `profile` phase) needs elfutils' libdw, which
# the device image lacks.
for lib in libdw.so.1 libelf.so.1 libbz2.so.1.0; do cp -L "/usr/lib/x86_64-linux-gnu/$lib" .gpu/stage/lib/; done
tar -C .gpu/stage -cJf .gpu/bundle.tar.xz bin lib plugins fonts data
rm -rf .gpu/stage
ls -l .gpu/bundle.tar.xz
