#!/usr/bin/env python3
"""Precision Lab's CUDA backend vs PyTorch on the same GPU, side by side in one invocation
(issue 5's benchmark).

Images/second of full training steps (Adam 1e-3), median of repeated runs, for small-cnn
and the seed CNN of the classic PyTorch AMP walkthrough (batch 590 in fp32, 1000 in fp16),
per recipe: ours through `plab_bench train --backend cuda`, PyTorch as that walkthrough
writes it: fp32 with TF32 off (the strict baseline), TF32 on, autocast fp16 with a
GradScaler, autocast bf16. Prints RATIO lines for RESULTS.md.

    python3 bench/compare_pytorch_gpu.py --bench build/bench/plab_bench [--quick] [--telemetry sampled]

--telemetry sampled runs ours with its steps between telemetry snapshots on cuDNN's 16-bit
convolutions (issue 71; every-step, the default, is the lab's own rounding and counting).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_pytorch import seed_cnn, small_cnn  # noqa: E402  the same models as the CPU comparison


MODELS = {"small-cnn": small_cnn, "seed-cnn": seed_cnn}


def torch_rate(model_name, recipe, batch, steps, warmup, repeats):
    """Median images/second of PyTorch training steps for one recipe."""
    torch.backends.cuda.matmul.allow_tf32 = recipe == "tf32"
    torch.backends.cudnn.allow_tf32 = recipe == "tf32"
    torch.backends.cudnn.benchmark = True
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(recipe)
    rates = []
    for r in range(repeats):
        torch.manual_seed(r)
        model = MODELS[model_name]().cuda()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        scaler = torch.amp.GradScaler("cuda", enabled=recipe == "amp-fp16")
        x = torch.rand(batch, 1, 28, 28, device="cuda")
        y = torch.randint(0, 10, (batch,), device="cuda")
        start = None
        for i in range(warmup + steps):
            if i == warmup:
                torch.cuda.synchronize()
                start = time.perf_counter()
            with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            loss.item()   # the walkthrough's loop reads the loss; ours does too, each step
        torch.cuda.synchronize()
        rates.append(batch * steps / (time.perf_counter() - start))
    return statistics.median(rates)


def ours(bench, model, recipe, batch, steps, warmup, repeats, telemetry):
    out = subprocess.run([bench, "train", "--backend", "cuda", "--models", model,
                          "--recipes", f"{recipe}/telemetry={telemetry}",
                          "--batch", str(batch), "--steps", str(steps), "--warmup", str(warmup),
                          "--repeats", str(repeats)], check=True, capture_output=True, text=True).stdout
    fields = dict(item.split("=", 1) for item in out.split()[1:])
    return float(fields["images_per_second"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="path of plab_bench")
    ap.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    ap.add_argument("--telemetry", choices=["every-step", "sampled"], default="every-step",
                    help="ours: the telemetry mode (sampled: cuDNN's 16-bit passes between snapshots)")
    a = ap.parse_args()
    repeats = 3 if a.quick else 5
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, median of {repeats} runs, "
          f"ours with telemetry {a.telemetry}", flush=True)
    rows = []
    plan = [("small-cnn", "fp32", 256), ("small-cnn", "tf32", 256), ("small-cnn", "amp-fp16", 256),
            ("small-cnn", "amp-bf16", 256),
            ("seed-cnn", "fp32", 590), ("seed-cnn", "tf32", 590), ("seed-cnn", "amp-fp16", 1000),
            ("seed-cnn", "amp-bf16", 1000), ("seed-cnn", "amp-fp16", 590),
            ("small-cnn", "fp32", 64), ("small-cnn", "amp-fp16", 64)]
    for model, recipe, batch in plan:
        steps, warmup = (10, 3) if a.quick else (30, 5)
        theirs = torch_rate(model, recipe, batch, steps, warmup, repeats)
        mine = ours(a.bench, model, recipe, batch, steps, warmup, repeats, a.telemetry)
        rows.append((model, recipe, batch, mine, theirs))
        print(f"{model:9s} {recipe:8s} b{batch:<5d} ours {mine:10.1f} img/s  pytorch {theirs:10.1f} img/s  "
              f"ours/pytorch {mine / theirs:.3f}", flush=True)

    def rate(model, recipe, batch, who):
        for m, r, b, mine, theirs in rows:
            if (m, r, b) == (model, recipe, batch):
                return mine if who == "ours" else theirs
        return float("nan")

    for recipe in ("amp-fp16", "amp-bf16"):
        print(f"RATIO seed-cnn {recipe} b1000 ours/pytorch = "
              f"{rate('seed-cnn', recipe, 1000, 'ours') / rate('seed-cnn', recipe, 1000, 'torch'):.3f} "
              f"(target >= 0.9)")
    for who in ("ours", "torch"):
        print(f"AMP speed-up seed-cnn ({who}): amp-fp16 b1000 / fp32 b590 = "
              f"{rate('seed-cnn', 'amp-fp16', 1000, who) / rate('seed-cnn', 'fp32', 590, who):.2f}x")
    print(f"small-cnn b64 ours amp-fp16 / fp32 = "
          f"{rate('small-cnn', 'amp-fp16', 64, 'ours') / rate('small-cnn', 'fp32', 64, 'ours'):.2f}x (target >= 1.0)")


if __name__ == "__main__":
    main()
