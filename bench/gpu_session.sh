#!/bin/sh
# What a GPU session runs on the device machine, in one call (see scripts/gpu-bundle.sh,
# which packs .gpu/bundle.tar.xz here first): the CUDA backend's test suites against the
# CPU reference, then the benchmark against PyTorch on the same GPU. Everything it prints
# is also written under $OUT (the device tool brings those files back).
#
#     (device) sh bench/gpu_session.sh [--quick]     with carry [".gpu"]
set -u
OUT=${OUT:-/tmp/plab-gpu-out}
mkdir -p "$OUT" /tmp/plab-gpu
tar -C /tmp/plab-gpu -xJf .gpu/bundle.tar.xz
bin=/tmp/plab-gpu/bin

# CUDA's libraries as the image has them: the toolkit's cuBLAS/runtime, PyTorch's cuDNN.
cudalibs=""
for name in libcudart.so.13 libcublas.so.13 libcudnn.so.9; do
  dir=$(find /usr/local /opt /usr/lib -name "$name" 2>/dev/null | head -1 | xargs -r dirname)
  [ -n "$dir" ] && cudalibs="$cudalibs:$dir"
done
export LD_LIBRARY_PATH="/tmp/plab-gpu/lib$cudalibs"
export QT_QPA_PLATFORM=offscreen

# A suite that crashes or fails is run again function by function, synchronously
# (CUDA_LAUNCH_BLOCKING=1: an error surfaces at the launch that caused it), and a function
# that still fails once more under compute-sanitizer where the machine allows it: the
# first GPU run of new code should bring back every failure in one call, not the first.
rerun() {
  suite=$1
  for fn in $("$bin/$suite" -functions 2>/dev/null | sed 's/()$//'); do
    CUDA_LAUNCH_BLOCKING=1 timeout 120 "$bin/$suite" "$fn" > /tmp/plab-gpu/fn.txt 2>&1
    rc=$?
    # By what it printed: tst_cuda_backend runs two test classes, and the one without
    # this function answers "unknown test function" with a non-zero status.
    if [ $rc -gt 128 ] || [ $rc -eq 124 ] || grep '^FAIL!' /tmp/plab-gpu/fn.txt | grep -qv 'Function not found'; then
      echo "----- $suite $fn failed (rc $rc), synchronous launches:"
      grep -Ev '^PASS' /tmp/plab-gpu/fn.txt | tail -40
      if command -v compute-sanitizer >/dev/null; then
        echo "----- $suite $fn under compute-sanitizer:"
        timeout 180 compute-sanitizer --print-limit 20 "$bin/$suite" "$fn" 2>&1 | grep -Ev '^PASS' | tail -60
      fi
    fi
  done
}

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for t in tst_cuda_kernel_math tst_cuda_op_math tst_placement tst_cuda_backend tst_cuda_training; do
    echo "===== $t"
    timeout 300 "$bin/$t" > /tmp/plab-gpu/suite.txt 2>&1
    rc=$?
    grep -Ev '^PASS' /tmp/plab-gpu/suite.txt
    [ $rc -eq 0 ] || { echo "===== $t exited with $rc: function by function"; rerun "$t"; }
  done
} 2>&1 | tee "$OUT/tests.txt"

# plab_bench finds the plugin next to itself; python3 here is the one with PyTorch, and
# only plab_bench gets our libraries (the wrapper), not the interpreter.
cat > /tmp/plab-gpu/plab_bench <<WRAP
#!/bin/sh
LD_LIBRARY_PATH="$LD_LIBRARY_PATH" exec "$bin/plab_bench" "\$@"
WRAP
chmod +x /tmp/plab-gpu/plab_bench
env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 bench/compare_pytorch_gpu.py --bench /tmp/plab-gpu/plab_bench "$@" 2>&1 |
  tee "$OUT/bench.txt"
