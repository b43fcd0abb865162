#!/usr/bin/env bash
# The main job: set up (packages, data, Release build), then open Precision Lab with an
# AMP FP16 run on MNIST already training. Without a display (no DISPLAY or
# WAYLAND_DISPLAY), or with --cli, it runs the same training headless with `plab train`
# instead, printing progress and the final test accuracy; extra arguments go to
# `plab train` (e.g. ./run.sh --cli --recipe pure-fp16).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$root/scripts/setup.sh"

cli=0
if [ "${1:-}" = "--cli" ]; then
  cli=1
  shift
elif [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ]; then
  echo "run.sh: no display found; training headless with plab (./run.sh --cli does this on purpose)" >&2
  cli=1
fi

if [ "$cli" -eq 1 ]; then
  mkdir -p "$root/runs"
  exec "$root/build/app/plab" train --config "$root/resources/configs/first-run.json" \
    --out "$root/runs/latest.json" "$@"
fi
exec "$root/build/app/precision-lab" --start "$root/resources/configs/first-run.json"
