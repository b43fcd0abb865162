#!/usr/bin/env bash
# Renders the committed PNG sizes of the application icon from precision-lab.svg
# (needs rsvg-convert from librsvg2-bin). Run after editing the SVG; commit the PNGs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
for size in 16 24 32 48 64 128 256; do
  rsvg-convert -w "$size" -h "$size" precision-lab.svg -o "precision-lab-$size.png"
done
