#!/usr/bin/env python3
"""The lesson search of issue 10 (docs/LESSON_SEARCH.md): for each row of a plan
(tag, variant, plab train arguments, seeds) trains the run once per seed with one thread
and prints one line: status, test accuracy (an autoencoder's test MSE and PSNR), mean loss of the last 50 steps, skipped steps,
steps, the share of loss gradients flushed to zero, the lost-update fractions, wall time.
Records are kept in OUT, so an interrupted search resumes where it stopped.

    scripts/lesson-search.py PLAN.tsv [PLAB] [OUT]   (default: build/app/plab, /tmp/lesson-search)
"""
import json, math, subprocess, sys, time, os, shlex
PLAB = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "build", "app", "plab")
OUT = sys.argv[3] if len(sys.argv) > 3 else "/tmp/lesson-search"
os.makedirs(OUT, exist_ok=True)
def run(tag, variant, args, seed, threads=1):
    path = f"{OUT}/{tag}.{variant}.s{seed}.json"
    if not os.path.exists(path):
        t0 = time.time()
        cmd = [PLAB, "train", "--quiet", "--threads", str(threads), "--seed", str(seed), "--out", path] + shlex.split(args)
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.time() - t0
        if p.returncode not in (0, 3) and not os.path.exists(path):
            print(f"{tag}\t{variant}\t{seed}\tERROR rc={p.returncode} {p.stderr.strip()[-200:]}", flush=True)
            return
    else:
        dt = float("nan")
    d = json.load(open(path))
    s = d["summary"]
    steps = d.get("steps", [])
    losses = [x.get("loss") for x in steps if isinstance(x, dict)]
    fin = [l for l in losses[-50:] if l is not None]
    lastloss = sum(fin)/len(fin) if fin else float("nan")
    lu = s.get("lost_update_fraction", {})
    uf = s.get("activation_grad_underflow_fraction", {}).get("loss", float("nan"))
    # An autoencoder's result is its test MSE (and PSNR), a classifier's its accuracy;
    # gradient accumulation adds the share of micro-batch gradients its buffer lost.
    result = (f"mse={s['test_mse']:.5f}\tpsnr={10 * math.log10(1 / s['test_mse']):.2f}" if s.get("test_mse")
              else f"acc={s.get('test_accuracy') if s.get('test_accuracy') is not None else float('nan'):.4f}")
    acc_lost = s.get("accumulation_lost_fraction")
    if acc_lost: result += f"\taccLost={ {k: round(v, 3) for k, v in acc_lost.items() if v is not None} }"
    print(f"{tag}\t{variant}\t{seed}\t{s.get('status')}\t{result}\tloss50={lastloss:.4f}"
          f"\tskip={s.get('skipped_steps')}\tsteps={s.get('steps')}\tlossUF={uf:.3f}\tlost={ {k: round(v,3) for k,v in lu.items()} }\t{dt:.1f}s", flush=True)

if __name__ == "__main__":
    # plan file: lines "tag<TAB>variant<TAB>args<TAB>seeds"
    for line in open(sys.argv[1]):
        line = line.rstrip("\n")
        if not line or line.startswith("#"): continue
        tag, variant, args, seeds = line.split("\t")
        for seed in seeds.split(","):
            run(tag, variant, args, int(seed))
