#!/usr/bin/env python3
"""Fuzz target: the PyTorch probe's output (python/precision_lab). Random runs, each with
random values where a user's script hands the probe numbers and text (losses, learning
rates, accuracies and test losses: NaN, infinities, huge and negative values; run names
with control characters, any Unicode, thousands of characters; the measured format; how
often it measures; tensors that are all zero, huge or NaN), are recorded, and every record
must be what the lab reads: strict JSON (no NaN literal), and `plab report --json` takes it
(exit 0) and copies it whole. A probe may refuse a value (ValueError, naming it) but never
write a record the lab refuses.

    fuzz_probe.py --plab PLAB --work DIR [--seconds 600] [--seed N] [--check-every 1]

Exit 0 with "N passed, 0 failed"; 1 naming the first input that broke a rule (kept in DIR);
77 without PyTorch.
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
    from precision_lab import Probe
except ImportError as e:
    print(f"SKIP: PyTorch is not installed ({e})")
    sys.exit(77)

NUMBERS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e-310, 1e38, 3.5e38, 1e300, -1e300, 65504.0, 65520.0,
           float("nan"), float("inf"), float("-inf"), 2.0 ** 64, -(2.0 ** 63)]


def number(rng):
    return rng.choice(NUMBERS) if rng.random() < 0.6 else rng.uniform(-1e6, 1e6) * 10.0 ** rng.randint(-40, 40)


def text(rng):
    pieces = ["", "run", "AMP FP16", "=HYPERLINK(\"x\")", "../../escaped", "\x1b[2J", "\x00", "\u202e", "日本語",
              "😀", "a" * rng.randint(1, 5000), "\ud800" if rng.random() < 0.1 else "x", "\"", "\\", "\n"]
    return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))


def model_of(rng):
    width = rng.randint(1, 8)
    layers = [torch.nn.Flatten(), torch.nn.Linear(16, width)]
    if rng.random() < 0.5:
        layers += [torch.nn.ReLU(), torch.nn.Linear(width, 3)]
    return torch.nn.Sequential(*layers)


def one_run(rng, path):
    torch.manual_seed(rng.randint(0, 2 ** 31))
    model = model_of(rng)
    opt = rng.choice([torch.optim.SGD(model.parameters(), lr=0.1, momentum=rng.choice([0.0, 0.9])),
                      torch.optim.Adam(model.parameters(), lr=1e-3)])
    fmt = rng.choice(["fp16", "bf16", "e4m3", "e5m2"])
    name = text(rng)
    try:
        probe = Probe(model, path, fmt=fmt, every=rng.randint(1, 3), optimizer=opt, name=name)
    except (ValueError, UnicodeError) as e:
        return f"refused at start: {type(e).__name__}"
    with probe:
        for _ in range(rng.randint(1, 6)):
            probe.begin_step()
            scale = rng.choice([1.0, 1e-30, 1e30, 0.0, float("nan")])
            x = torch.randn(rng.randint(1, 4), 16) * scale
            out = model(x)
            loss = out.float().pow(2).mean()
            opt.zero_grad()
            if torch.isfinite(loss):
                loss.backward()
                opt.step()
            reported = loss if rng.random() < 0.5 else number(rng)
            lr = None if rng.random() < 0.5 else number(rng)
            try:
                probe.end_step(reported, batch=x.shape[0], lr=lr)
            except ValueError:
                pass
            if rng.random() < 0.4:
                try:
                    probe.evaluate(number(rng) if rng.random() < 0.5 else rng.random(), number(rng))
                except ValueError:
                    pass
    return "recorded"


def strict(text_):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    return json.loads(text_, parse_constant=refuse)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plab", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--check-every", type=int, default=1, help="run plab report on every Nth record")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(args.seed)
    print(f"seed {args.seed}")
    start = time.monotonic()
    runs = checked = 0
    while time.monotonic() - start < args.seconds:
        path = os.path.join(args.work, "probe.plab.json")
        for leftover in (path,):
            if os.path.exists(leftover):
                os.unlink(leftover)
        outcome = one_run(rng, path)
        runs += 1
        if outcome != "recorded":
            continue
        with open(path, encoding="utf-8") as f:
            body = f.read()
        try:
            strict(body)
        except ValueError as e:
            print(f"FAIL: run {runs} (seed {args.seed}): the record is not strict JSON: {e}; kept in {path}")
            print(f"0 passed, 1 failed")
            return 1
        if runs % args.check_every == 0:
            copy = os.path.join(args.work, "copy")
            done = subprocess.run([args.plab, "report", path, "--json", copy], capture_output=True, text=True)
            for f in os.listdir(copy) if os.path.isdir(copy) else []:
                os.unlink(os.path.join(copy, f))
            if done.returncode != 0:
                print(f"FAIL: run {runs} (seed {args.seed}): plab report exit {done.returncode}: "
                      f"{done.stderr.strip()[:400]}; kept in {path}")
                print("0 passed, 1 failed")
                return 1
            checked += 1
    print(f"{runs} probe runs, {checked} read back by plab report, none refused")
    print(f"{runs} passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
