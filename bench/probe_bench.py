#!/usr/bin/env python3
"""The PyTorch probe's statistics (python/precision_lab, rounding_stats) against their
definition written the plain way, one mask and one sum per count and frexp of the nonzero
values (as the probe computed them before 2026-11-27), side by side on the same tensors:
median seconds of --repeats alternated calls, and whether both give the same numbers.

usage: /usr/bin/python3 bench/probe_bench.py [--threads 1] [--repeats 5]
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from precision_lab.probe import _FORMATS, rounding_stats  # noqa: E402


def by_definition(x, fmt):
    """fp16 and bf16 only: the counts and histogram as rounding_stats documents them."""
    x = x.detach().float().reshape(-1)
    finite = torch.isfinite(x)
    nonzero = finite & (x != 0)
    dtype, min_normal = _FORMATS[fmt]
    y = x.to(dtype).float()
    stats = {
        "count": int(x.numel()),
        "zeros_in": int((x == 0).sum()),
        "underflow": int((nonzero & (y == 0)).sum()),
        "subnormal": int((finite & (y != 0) & (y.abs() < min_normal)).sum()),
        "overflow": int((finite & torch.isinf(y)).sum()),
        "nan": int(torch.isnan(x).sum()),
        "inf_in": int(torch.isinf(x).sum()),
    }
    histogram = {"first_exponent": 0, "counts": [], "zeros": stats["zeros_in"],
                 "non_finite": stats["nan"] + stats["inf_in"]}
    values = x[nonzero].abs()
    if values.numel():
        exponents = torch.frexp(values)[1].to(torch.int64) - 1
        first = int(exponents.min())
        histogram["first_exponent"] = first
        histogram["counts"] = [int(c) for c in torch.bincount(exponents - first)]
    return stats, histogram


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    print(f"torch {torch.__version__}, threads {args.threads}, median of {args.repeats}")
    cases = [("activation 512x32x28x28, N(0, 1e-3)", torch.randn(512, 32, 28, 28) * 1e-3),
             ("gradient 512x16x28x28, N(0, 1e-6)", torch.randn(512, 16, 28, 28) * 1e-6),
             ("weights 1568x128, N(0, 0.05)", torch.randn(1568, 128) * 0.05)]
    for name, x in cases:
        for fmt in ("fp16", "bf16"):
            times = {"definition": [], "rounding_stats": []}
            for _ in range(args.repeats):
                for label, fn in (("definition", by_definition), ("rounding_stats", rounding_stats)):
                    start = time.perf_counter()
                    result = fn(x, fmt)
                    times[label].append(time.perf_counter() - start)
                    if label == "definition":
                        expected = result
                    elif result != expected:
                        print(f"{name} {fmt}: DIFFERENT numbers")
                        return 1
            a, b = statistics.median(times["definition"]), statistics.median(times["rounding_stats"])
            print(f"{name} {fmt}: definition {a:.3f} s, rounding_stats {b:.3f} s, ratio {b / a:.3f}, same numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
