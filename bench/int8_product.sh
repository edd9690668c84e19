#!/usr/bin/env bash
# The int8 precision through the product path on the GPU machine (~3 minutes): renders a
# calibration set with the example path tracer (16 scenes, seed 3, 256x256, 1 and 4 spp), runs
# `denox calibrate` on the shipped denoiser, then `denox bench` at 1920x1088 in fp16 and in int8
# (clock warm-up, per-dispatch table), and `denox compile --no-measure` for the int8 schedule.
# TUNED=1: then also measured tuning (`denox compile` in fp16 and int8 on a cache in WORK, the
# int8 configurations and the int8-X0 up2 variants included) and `denox bench --tuning measure`.
#
# Here:   cmake --build build --target denox denox_pathtracer
#         strip -o /tmp/denox build/bin/denox && strip -o /tmp/denox_pathtracer build/bin/denox_pathtracer
#         rm -rf .device && bash ../shared/tools/device-prep.sh /tmp/denox /tmp/denox_pathtracer
# There:  source .device/env.sh; bash bench/int8_product.sh          (device tool, carry [".device"])
# Knobs: SIZE (1920x1088), RUNS (50), TUNED, OUT, WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-int8-product}
work=${WORK:-/tmp/denox-int8-work}
model=models/oidn_pathtracer_balanced.onnx
mkdir -p "$out" "$work"
rm -rf "$work/calib"
denox_pathtracer --dataset "$work/calib" --count 16 --size 256x256 --dataset-spp 1,4 --reference-spp 16 --seed 3 | tail -1
# The dataset's inputs are HWC (color, albedo, normal); the CLI takes NCHW .npy.
python3 - "$work/calib" <<'PY'
import glob, sys
import numpy as np
for f in sorted(glob.glob(f"{sys.argv[1]}/*_spp*.npy")):
    np.save(f.replace(".npy", "_nchw.npy"), np.ascontiguousarray(np.load(f).transpose(2, 0, 1)[None]).astype(np.float32))
PY
args=()
for f in "$work"/calib/*_nchw.npy; do args+=(-i "$f"); done
denox calibrate "$model" "${args[@]}" -o "$out/calibration.json" | tee "$out/calibrate.txt"
common=(--size "${SIZE:-1920x1088}" --runs "${RUNS:-50}" --warmup 5 --warmup-ms 500 --per-dispatch --no-cache)
denox bench "$model" "${common[@]}" --precision fp16 | tee "$out/bench-fp16.txt"
denox bench "$model" "${common[@]}" --precision int8 --calibration "$out/calibration.json" | tee "$out/bench-int8.txt"
denox compile "$model" --no-cache --no-measure --quiet --precision int8 --calibration "$out/calibration.json" | tee "$out/compile-int8.txt"
if [ "${TUNED:-0}" = 1 ]; then
  rm -f "$work/cache.sqlite3"
  tuned=(--size "${SIZE:-1920x1088}" --cache "$work/cache.sqlite3")
  denox compile "$model" "${tuned[@]}" --quiet --precision fp16 | tee "$out/compile-fp16-tuned.txt"
  denox compile "$model" "${tuned[@]}" --quiet --precision int8 --calibration "$out/calibration.json" | tee "$out/compile-int8-tuned.txt"
  bench=(--runs "${RUNS:-50}" --warmup 5 --warmup-ms 500 --per-dispatch --tuning measure)  # (tunes for --size)
  denox bench "$model" "${tuned[@]}" "${bench[@]}" --precision fp16 | tee "$out/bench-fp16-tuned.txt"
  denox bench "$model" "${tuned[@]}" "${bench[@]}" --precision int8 --calibration "$out/calibration.json" | tee "$out/bench-int8-tuned.txt"
fi
