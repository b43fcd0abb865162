#!/usr/bin/python3
"""Precision Lab vs PyTorch (CPU) on this machine, side by side in one invocation.

Same model, batch, optimizer (Adam 1e-3) and thread count; images/second of full training
steps, median of repeated runs. Also: each emulated recipe's step time over our fp32 step
time, the seed CNN against PyTorch and against the OpenBLAS sgemm rate, and both engines
again while another process keeps one core busy.

    /usr/bin/python3 bench/compare_pytorch.py [--build build] [--quick]

Needs Debian's python3-torch (1.13, CPU): `apt-get install python3-torch`.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))


def seed_cnn():
    # The CNN of the classic PyTorch AMP walkthrough.
    return nn.Sequential(
        nn.Conv2d(1, 420, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(420, 1000, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(1000 * 7 * 7, 10))


def torch_rate(make, batch, steps, warmup, repeats, threads, autocast=None):
    """autocast: None (fp32) or a dtype for torch.autocast("cpu", dtype), loss in fp32."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rates = []
    for _ in range(repeats):
        model = make()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = torch.rand(batch, 1, 28, 28)
        y = torch.randint(0, 10, (batch,))
        elapsed = 0.0
        for i in range(warmup + steps):
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if autocast is None:
                loss = F.cross_entropy(model(x), y)
            else:
                with torch.autocast("cpu", dtype=autocast):
                    logits = model(x)
                loss = F.cross_entropy(logits.float(), y)
            loss.backward()
            opt.step()
            if i >= warmup:
                elapsed += time.perf_counter() - t0
        rates.append(batch * steps / elapsed)
    return statistics.median(rates)


def ours(build, *args):
    out = subprocess.run([os.path.join(build, "bench", "plab_bench"), *map(str, args)],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        fields = dict(item.split("=", 1) for item in line.split()[1:])
        rows.append(fields)
    return rows


def cpu_model_and_flags():
    model, flags = "?", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "?":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    wanted = ("avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile", "amx_fp16")
    return model, " ".join(f for f in wanted if f in flags) or "none of " + ", ".join(wanted)


def native_bf16(a, reps, t):
    """Issue 16: amp-bf16 on the CPU's native units (oneDNN) vs our fp32, our exact amp-bf16
    and PyTorch's fp32 and bf16 autocast, side by side."""
    model, flags = cpu_model_and_flags()
    print(f"CPU: {model}; flags: {flags}")
    caps = " ".join(f"{k}={os.environ[k]}" for k in ("PLAB_SIMD_MAX", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY",
                                                      "ONEDNN_MAX_CPU_ISA") if k in os.environ)
    print(f"caps: {caps or 'none (every level this CPU has)'}")
    for name, make, batch, steps, warmup, r in (("seed-cnn", seed_cnn, 32, 6, 1, reps),
                                                ("small-cnn", small_cnn, 64, 30, 5, reps)):
        tf = torch_rate(make, batch, steps, warmup, r, t)
        try:
            tb = torch_rate(make, batch, steps, warmup, r, t, autocast=torch.bfloat16)
        except RuntimeError as e:   # e.g. oneDNN capped below the CPU's bf16 units
            print(f"{name}: pytorch bf16 autocast failed here: {str(e).splitlines()[0]}")
            tb = float("nan")
        args = ["train", "--models", name, "--batch", batch, "--steps", steps, "--warmup", warmup,
                "--repeats", r, "--threads", t]
        fp32 = float(ours(a.build, *args, "--recipes", "fp32")[0]["images_per_second"])
        exact = float(ours(a.build, *args, "--recipes", "amp-bf16", "--arithmetic", "exact")[0]["images_per_second"])
        hw = float(ours(a.build, *args, "--recipes", "amp-bf16", "--arithmetic", "hardware")[0]["images_per_second"])
        print(f"{name} b{batch}: pytorch fp32 {tf:.1f}, pytorch bf16 autocast {tb:.1f}, ours fp32 {fp32:.1f}, "
              f"ours amp-bf16 exact {exact:.1f}, ours amp-bf16 hardware {hw:.1f} img/s")
        print(f"RATIO {name} amp-bf16 hardware / our fp32 = {hw / fp32:.3f}")
        print(f"RATIO {name} amp-bf16 hardware / pytorch bf16 autocast = {hw / tb:.3f}")
        print(f"RATIO {name} our fp32 / pytorch fp32 = {fp32 / tf:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--native-bf16", action="store_true", help="only the native bf16 comparison (issue 16)")
    a = ap.parse_args()
    reps = 3 if a.quick else 5
    t = a.threads
    print(f"torch {torch.__version__}, threads {t}, median of {reps} runs", flush=True)
    if a.native_bf16:
        native_bf16(a, reps, t)
        return

    # 1. small-cnn, batch 64: ours (every recipe) vs PyTorch fp32.
    torch_small = torch_rate(small_cnn, 64, 30, 5, reps, t)
    rows = ours(a.build, "train", "--models", "small-cnn", "--recipes", "fp32,tf32,amp-fp16,amp-bf16",
                "--batch", 64, "--steps", 30, "--warmup", 5, "--repeats", reps, "--threads", t)
    ours_fp32 = float(rows[0]["images_per_second"])
    print(f"small-cnn b64 pytorch fp32: {torch_small:.1f} img/s")
    for r in rows:
        print(f"small-cnn b64 ours {r['recipe']:9s}: {float(r['images_per_second']):.1f} img/s, "
              f"step time x{float(r['vs_fp32_step_time']):.3f} of our fp32")
    print(f"RATIO small-cnn fp32 ours/pytorch = {ours_fp32 / torch_small:.3f} (target >= 1.0)", flush=True)

    # 2. seed-cnn fp32, batch 32, a few steps; and the sgemm rate of its biggest GEMM.
    torch_seed = torch_rate(seed_cnn, 32, 3, 1, 3, t)
    seed = ours(a.build, "train", "--models", "seed-cnn", "--recipes", "fp32", "--batch", 32,
                "--steps", 3, "--warmup", 1, "--repeats", 3, "--threads", t)[0]
    ours_seed = float(seed["images_per_second"])
    # Per image: conv1 2*420*9*784, conv2 2*1000*3780*196, fc 2*49000*10; backward ~2x forward
    # (conv1 has no input gradient, so slightly less; counted as 3x, an upper bound of work).
    flops_per_image = 3 * (2 * 420 * 9 * 784 + 2 * 1000 * 3780 * 196 + 2 * 49000 * 10)
    sg = ours(a.build, "sgemm", "--m", 1000, "--n", 32 * 196, "--k", 3780, "--threads", t, "--repeats", 5)[0]
    gflops = float(sg["gflops"])
    achieved = ours_seed * flops_per_image / 1e9
    print(f"seed-cnn b32 pytorch fp32: {torch_seed:.2f} img/s; ours fp32: {ours_seed:.2f} img/s")
    print(f"RATIO seed-cnn fp32 ours/pytorch = {ours_seed / torch_seed:.3f} (target >= 0.8)")
    print(f"sgemm 1000x6272x3780: {gflops:.1f} GFLOP/s; seed-cnn step achieves {achieved:.1f} GFLOP/s")
    print(f"RATIO seed-cnn achieved/sgemm = {achieved / gflops:.3f} (target >= 0.7)", flush=True)

    # 3. One core kept busy by another process.
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        torch_busy = torch_rate(small_cnn, 64, 15, 3, reps, t)
        ours_busy = float(ours(a.build, "train", "--models", "small-cnn", "--recipes", "fp32", "--batch", 64,
                               "--steps", 15, "--warmup", 3, "--repeats", reps, "--threads", t)[0]["images_per_second"])
    finally:
        hog.kill()
    print(f"busy core: pytorch {torch_busy:.1f} img/s (x{torch_small / torch_busy:.2f} slower), "
          f"ours {ours_busy:.1f} img/s (x{ours_fp32 / ours_busy:.2f} slower)")


if __name__ == "__main__":
    main()
