#!/usr/bin/env bash
# Measured tuning of an OIDN U-Net with a 3-channel input (random weights; ARCH=balanced, the
# default, is the issue's gate model and bench/conv_layers.cpp's end-to-end plan) in fp16 and in
# int8 through the CLI, on the GPU machine (~2 minutes): calibration on 8 random 256x256 images,
# `denox compile` (measure) on a fresh cache, then `denox bench --tuning measure` of each plan.
#
# Here:   stage as bench/int8_product.sh says (denox, denox_pathtracer -> .device)
# There:  source .device/env.sh; bash bench/int8_tuned_oidn3.sh     (device tool, carry [".device"])
# Knobs: ARCH (balanced or small), SIZE (1920x1088), RUNS (50), OUT (/tmp/denox-int8-oidn3-ARCH),
# WORK. The heuristic schedules go to $OUT/compile-oidn3-{fp16,int8}-heuristic.txt
# (`compile --no-measure`), to compare their configurations with the tuned ones.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${ARCH:-balanced}
out=${OUT:-/tmp/denox-int8-oidn3-$arch}
work=${WORK:-/tmp/denox-int8-oidn3-work}
mkdir -p "$out" "$work"
model="$work/oidn_${arch}_3ch.onnx"
denox make-model "$model" --arch "$arch" --channels 3 --pad-crop --seed 7
source bench/calibration_images.sh
calibration_images "$work"
denox calibrate "$model" "${calib_args[@]}" -o "$out/calibration-oidn3.json" | tee "$out/calibrate-oidn3.txt"
rm -f "$work/cache.sqlite3"
common=(--size "${SIZE:-1920x1088}" --cache "$work/cache.sqlite3")
denox compile "$model" "${common[@]}" --quiet --no-measure --precision fp16 > "$out/compile-oidn3-fp16-heuristic.txt"
denox compile "$model" "${common[@]}" --quiet --no-measure --precision int8 --calibration "$out/calibration-oidn3.json" \
  > "$out/compile-oidn3-int8-heuristic.txt"
denox compile "$model" "${common[@]}" --quiet --precision fp16 | tee "$out/compile-oidn3-fp16-tuned.txt"
denox compile "$model" "${common[@]}" --quiet --precision int8 --calibration "$out/calibration-oidn3.json" | tee "$out/compile-oidn3-int8-tuned.txt"
bench=(--runs "${RUNS:-50}" --warmup 5 --warmup-ms 500 --per-dispatch --tuning measure)
for p in heuristic measure; do
  denox bench "$model" "${common[@]}" "${bench[@]/measure/$p}" --precision fp16 | tee "$out/bench-oidn3-fp16-$p.txt"
  denox bench "$model" "${common[@]}" "${bench[@]/measure/$p}" --precision int8 --calibration "$out/calibration-oidn3.json" |
    tee "$out/bench-oidn3-int8-$p.txt"
done
