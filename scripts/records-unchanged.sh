#!/usr/bin/env bash
# Issue 31's guard: the engine's storage refactor must not change a single bit of what a
# run computes. Builds `plab` at BASE (a commit before the change) in its own folder, then
# trains every recipe, both CPU arithmetics, with SGD and Adam, master weights on and off,
# and a per-layer recipe, deterministically (one thread, a fixed seed, a small CNN and an
# MLP, 40 steps, telemetry every 10) with BASE's plab and with this tree's, and compares
# the two records of each run with everything but the timing fields and the build's
# versions (docs/RUN_RECORD.md lists them). Exits 1 on the first run that differs, naming
# the first differing field.
#   scripts/records-unchanged.sh BASE [this tree's plab, default build/app/plab]
# The environment goes to both (PLAB_PACKED_STORAGE=on checks the packed 16-bit path, whose
# memory figures differ by design: RECORDS_IGNORE_MEMORY=1 leaves the "memory" key out).
# RECORDS_ONLY=REGEX runs only the runs whose names match (grep -E), for a quick look.
# Needs the data the set-up fetches (~/.local/share/precision-lab/data).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
base="${1:?usage: scripts/records-unchanged.sh BASE [PLAB]}"
new="${2:-$root/build/app/plab}"
commit="$(git -C "$root" rev-parse --verify "$base^{commit}")"
short="${commit:0:10}"
tree="$root/build-records/$short-src"
build="$root/build-records/$short"
if [ ! -x "$build/app/plab" ]; then
  rm -rf "$tree"
  mkdir -p "$root/build-records"
  git -C "$root" archive "$commit" | (mkdir -p "$tree" && tar -x -C "$tree")
  cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLAB_WITH_CUDA=OFF -DPLAB_BUILD_GUI=OFF \
    -DPLAB_BUILD_TESTS=OFF -DPLAB_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" --target plab -j"$(nproc)" >/dev/null
fi
old="$build/app/plab"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

cnn="--model small-cnn --widths 8,16"
runs=()
for recipe in fp32 tf32 amp-fp16 amp-bf16 pure-fp16 pure-bf16 fp8-unscaled fp8-delayed fp8-current mxfp8 mxfp4 nvfp4; do
  for arithmetic in exact hardware; do
    runs+=("$recipe-$arithmetic|$cnn --recipe $recipe --arithmetic $arithmetic")
  done
done
runs+=("amp-bf16-sgd|$cnn --recipe amp-bf16 --optimizer sgd --lr 0.05")
runs+=("bf16-no-master|$cnn --recipe amp-bf16 --master-weights off --optimizer sgd --lr 0.05")
runs+=("fp16-no-master-static|$cnn --recipe amp-fp16 --master-weights off --loss-scale static:1024")
runs+=("fp16-fp16-accumulate|$cnn --recipe amp-fp16 --fp32-accumulate off --fp32-sensitive-ops off --loss-scale dynamic")
# Sums in the format also where an operand is mostly zeros (gemm_sparse.h skips those steps).
runs+=("bf16-bf16-accumulate|$cnn --recipe amp-bf16 --fp32-accumulate off")
runs+=("tf32-tf32-accumulate|$cnn --recipe tf32 --fp32-accumulate off")
runs+=("pure-fp16-fp16-accumulate|$cnn --recipe pure-fp16 --fp32-accumulate off --loss-scale dynamic")
runs+=("per-layer|$cnn --recipe amp-bf16 --layer conv1=fp32,fc1=fp8-current")
# FP8 layers in an fp32 run: codes, fp32 activations (nothing packed).
runs+=("per-layer-fp32-fp8|$cnn --recipe fp32 --layer conv2=fp8-current,fc1=fp8-delayed")
runs+=("mlp-pure-fp16|--model mlp --widths 64,32 --recipe pure-fp16 --loss-scale dynamic")
# Each model row's stack (nn/model_stacks.cpp): a deep MLP, and a small vit with its own
# training defaults (cosine schedule, warm-up, zero-initialised branches, label smoothing).
runs+=("deep-mlp-amp-bf16|--model deep-mlp --widths 32,6 --recipe amp-bf16")
runs+=("vit-amp-fp16|--model vit --widths 32,1,2,7 --recipe amp-fp16 --batch 16 --max-steps 20 --histogram-every 5 --eval-every 10")
# The weights' write rounded stochastically or Kahan-compensated (SGD and Adam), 16-bit weights.
for rounding in stochastic kahan; do
  runs+=("mlp-bf16-sgd-$rounding|--model mlp --widths 64,32 --recipe amp-bf16 --master-weights off --optimizer sgd --update-rounding $rounding")
  runs+=("mlp-fp16-adam-$rounding|--model mlp --widths 64,32 --recipe pure-fp16 --loss-scale dynamic --update-rounding $rounding")
done
# The seed CNN at batch 64: conv2 lowers its input in two blocks of samples (Conv2d::
# kColsBudget), so its filter gradient sums over blocks; 3 steps (its own batch and steps).
# Exact arithmetic: with packing on, its products run in blocks (docs/ARITHMETIC.md), whose
# oneDNN sums differ from the whole product's; the exact arithmetic's must not.
# Three epochs with a partial last batch each (8,000 / 600), their batches written; then
# the same steps read back from that file (BatchSource's two kinds).
mlp_epochs="--model mlp --widths 16,8 --recipe amp-fp16 --max-steps 0 --histogram-every 10 --eval-every 0"
runs+=("epochs|$mlp_epochs --batch 600 --epochs 3 --write-batches $out/epochs.batches")
runs+=("batch-file|$mlp_epochs --read-batches $out/epochs.batches")
# fp8-delayed: its quantised copies held as FP8 codes, conv1's filter gradient decoded in spans;
# mxfp8 and nvfp4: dY quantised a lowering block at a time, activations packed around them.
for recipe in pure-bf16 amp-fp16 fp8-delayed mxfp8 nvfp4; do
  runs+=("seed-cnn-$recipe|--model seed-cnn --recipe $recipe --arithmetic exact --batch 64 --max-steps 3 --histogram-every 1 --eval-every 0")
done
runs+=("seed-cnn-fp16-accumulate|--model seed-cnn --recipe amp-fp16 --fp32-accumulate off --batch 64 --max-steps 3 --histogram-every 1 --eval-every 0")

failed=0
for entry in "${runs[@]}"; do
  name="${entry%%|*}"
  flags="${entry#*|}"
  if [ -n "${RECORDS_ONLY:-}" ] && ! grep -Eq -- "$RECORDS_ONLY" <<<"$name"; then continue; fi
  common="--threads 1 --seed 3 --quiet"
  case "$flags" in
    *--epochs*|*--read-batches*) ;;
    *) common="$common --epochs 1" ;;
  esac
  case "$flags" in
    *--max-steps*) ;;
    *) common="$common --batch 32 --max-steps 40 --histogram-every 10 --eval-every 20" ;;
  esac
  # shellcheck disable=SC2086  # the flags are words
  "$old" train $common $flags --out "$out/$name.old.json" >/dev/null 2>"$out/$name.old.err" || true
  # shellcheck disable=SC2086
  "$new" train $common $flags --out "$out/$name.new.json" >/dev/null 2>"$out/$name.new.err" || true
  if ! /usr/bin/python3 - "$out/$name.old.json" "$out/$name.new.json" "$name" <<'EOF'
import json, os, sys
def load(path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        with open(path[:-5] + ".err") as err:
            sys.exit(f"{sys.argv[3]}: no record from {path}: {err.read().strip()[-300:]}")
    r.pop("created_at", None)
    if os.environ.get("RECORDS_IGNORE_MEMORY") == "1":
        r.pop("memory", None)
    r.pop("versions", None)
    r.pop("machine", None)
    s = r.get("summary", {})
    s.pop("finished_at", None)
    s.pop("images_per_second", None)
    for step in r.get("steps", []):
        step.pop("time_ms", None)
    for sample in r.get("memory", {}).get("samples", []):
        sample.pop("elapsed_ms", None)
    return r
def first_difference(a, b, path="record"):
    if type(a) != type(b):
        return path
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"
old, new, name = sys.argv[1], sys.argv[2], sys.argv[3]
a, b = load(old), load(new)
# The "recipe" block spelled out settings.recipe and no reader read it; records after
# 2026-11-29 do not write it (the settings say the recipe).
if "recipe" in a and "recipe" not in b:
    a.pop("recipe")
# Keys records gained after BASE: each must hold what BASE's rule implied (issue 38: the
# optimizer state's format, fp32 beside master weights, else the storage format).
ra, rb = a.get("recipe", {}), b.get("recipe", {})
if "optimizer_state" in rb and "optimizer_state" not in ra:
    implied = "fp32" if ra.get("master_weights", True) else ra.get("storage")
    if rb["optimizer_state"] != implied:
        print(f"{name}: DIFFERS at record.recipe.optimizer_state: {rb['optimizer_state']!r}, BASE implied {implied!r}")
        sys.exit(1)
    rb.pop("optimizer_state")
sa, sb = a.get("settings", {}), b.get("settings", {})
if "optimizer_state" in sb and "optimizer_state" not in sa:
    if sb["optimizer_state"] != "auto":   # the setting's default: BASE's rule
        print(f"{name}: DIFFERS at record.settings.optimizer_state: {sb['optimizer_state']!r}")
        sys.exit(1)
    sb.pop("optimizer_state")
# Settings keys added after BASE (issue 33's schedule and zero-initialised branches): each
# must hold its default, which is what BASE did.
# (2026-11-29: Adam's eps, gradient accumulation, attention's scores, the telemetry mode.)
for key, default in (("lr_schedule", "constant"), ("warmup_steps", 0), ("zero_init_residual", False),
                     ("label_smoothing", 0.0), ("adam_eps", 1e-8), ("grad_accum_steps", 1), ("grad_accum_format", "fp32"),
                     ("attention_scores", "storage"), ("telemetry", "every-step")):
    if key in sb and key not in sa:
        if sb[key] != default:
            print(f"{name}: DIFFERS at record.settings.{key}: {sb[key]!r}, BASE had no such setting")
            sys.exit(1)
        sb.pop(key)
# Update rounding (issue 38): BASE rounded every update to nearest.
for section, got in (("recipe", rb), ("settings", sb)):
    if "update_rounding" in got and "update_rounding" not in (ra if section == "recipe" else sa):
        if got["update_rounding"] != "nearest":
            print(f"{name}: DIFFERS at record.{section}.update_rounding: {got['update_rounding']!r}")
            sys.exit(1)
        got.pop("update_rounding")
# Run totals of every rounding site (2026-11-28): each at least the sum of BASE's snapshots
# of that site, and equal to it where every step was a snapshot; a site BASE's snapshots
# rounded is there.
sma, smb = a.get("summary", {}), b.get("summary", {})
if "run_rounding" in smb and "run_rounding" not in sma:
    sums = {}
    for snap in a.get("telemetry", []):
        for l in snap.get("layers", []):
            key = (l["layer"], l["kind"])
            acc = sums.setdefault(key, {})
            for k, v in l.get("stats", {}).items():
                acc[k] = acc.get(k, 0) + v
    every = len(a.get("telemetry", [])) == sma.get("steps")
    totals = {(t["layer"], t["kind"]): t["stats"] for t in smb["run_rounding"]}
    for key, acc in sums.items():
        if acc.get("count", 0) == 0:
            continue
        got = totals.get(key)
        if got is None or any((got.get(k, 0) != v) if every else (got.get(k, 0) < v) for k, v in acc.items()):
            print(f"{name}: DIFFERS at record.summary.run_rounding {key}: {got!r} against BASE's snapshots {acc!r}")
            sys.exit(1)
    smb.pop("run_rounding")
    if smb.pop("run_rounding_through_step", None) != smb.get("steps"):
        print(f"{name}: DIFFERS at record.summary.run_rounding_through_step: not the run's {smb.get('steps')} steps")
        sys.exit(1)
# Where the gradient norm is clipped (issue 38): BASE clipped after unscaling.
if "clip_grad_at" in sb and "clip_grad_at" not in sa:
    if sb["clip_grad_at"] != "unscaled":
        print(f"{name}: DIFFERS at record.settings.clip_grad_at: {sb['clip_grad_at']!r}")
        sys.exit(1)
    sb.pop("clip_grad_at")
# The MX block scale's rounding (issue 38): BASE rounded every block's exponent down.
if "mx_scale" in sb and "mx_scale" not in sa:
    if sb["mx_scale"] != "floor":
        print(f"{name}: DIFFERS at record.settings.mx_scale: {sb['mx_scale']!r}")
        sys.exit(1)
    sb.pop("mx_scale")
qa, qb = ra.get("quantization", {}), rb.get("quantization", {})
if isinstance(qb, dict) and "mx_scale" in qb and "mx_scale" not in qa:
    if qb["mx_scale"] != "floor":
        print(f"{name}: DIFFERS at record.recipe.quantization.mx_scale: {qb['mx_scale']!r}")
        sys.exit(1)
    qb.pop("mx_scale")
# Counts records gained after BASE (issue 38: the optimizer state flushed or made inf), which
# BASE did not count: left out where BASE's record has no such key.
sum_a, sum_b = a.get("summary", {}), b.get("summary", {})
for key in ("optimizer_state_flushed", "optimizer_state_made_non_finite"):
    if key in sum_b and key not in sum_a:
        sum_b.pop(key)
for snap_a, snap_b in zip(a.get("telemetry", []), b.get("telemetry", [])):
    # Issue 33: a layer whose weight gradients are never rounded (fp32) now reports its
    # update counts in a weight_grad entry without values (stats.count 0); BASE had none.
    old_keys = {(l.get("layer"), l.get("kind")) for l in snap_a.get("layers", [])}
    snap_b["layers"] = [l for l in snap_b.get("layers", [])
                        if (l.get("layer"), l.get("kind")) in old_keys
                        or not (l.get("kind") == "weight_grad" and l.get("stats", {}).get("count") == 0)]
    for la, lb in zip(snap_a.get("layers", []), snap_b.get("layers", [])):
        for key in ("state_flushed", "state_non_finite"):
            if key in lb and key not in la:
                lb.pop(key)
# ... and so the summary's per-layer update counts gain those layers.
for key in ("lost_update_fraction", "weights_made_non_finite"):
    if isinstance(sum_a.get(key), dict) and isinstance(sum_b.get(key), dict):
        for layer in [l for l in sum_b[key] if l not in sum_a[key]]:
            sum_b[key].pop(layer)
d = first_difference(a, b)
print(f"{name}: " + ("identical" if d is None else "DIFFERS at " + d))
sys.exit(0 if d is None else 1)
EOF
  then
    failed=1
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "records-unchanged.sh: some records differ from $short's" >&2
  exit 1
fi
echo "records-unchanged.sh: every record is identical to $short's"
