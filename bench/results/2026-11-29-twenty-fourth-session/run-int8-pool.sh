#!/usr/bin/env bash
# Twenty-fourth session, device call 1: the int8 heuristic's pooled 32-channel convs on 16 x 1
# subgroups (q8_configs). Same-call A/B of heuristic int8 plans before (.device/lib-a: 39f775e)
# and after, both networks, every size; then every plan kind against the CPU reference at odd
# sizes (bench/check_reference.sh): fp16 and int8, heuristic and tuned.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fourth-session/run-int8-pool.sh OUT
set -u
out=${1:-/tmp/out24}; mkdir -p "$out"
TUNING=heuristic PRECISIONS=int8 ARCHS="balanced small" SIZES="1280x720 1920x1088 3840x2160" bash bench/ab_libs.sh "$out/int8-pool"
for tuning in ${CHECK_TUNINGS:-heuristic measure}; do
  TUNING=$tuning PRECISIONS="fp16 int8" bash bench/check_reference.sh "$out/correctness-$tuning.txt" > /dev/null 2>&1 ||
    echo "check_reference $tuning FAILED"
  cat "$out/correctness-$tuning.txt"
done
# Determinism: the same int8 and fp16 plans run three times on one input give the same bits
# (the emulated int8 plan of OIDN balanced on lavapipe does not: see RESULTS).
det=$(mktemp -d /tmp/denox-det-XXXXXX)
export DENOX_CACHE_DIR=$det/cache
source bench/calibration_images.sh
calibration_images "$det"
denox make-image "$det/in.pfm" --size 957x541 --seed 31 >/dev/null
for arch in balanced small; do
  denox make-model --arch "$arch" --channels 3 --pad-crop "$det/$arch.onnx" >/dev/null
  denox calibrate "$det/$arch.onnx" "${calib_args[@]}" -o "$det/cal-$arch.json" >/dev/null
  for precision in int8 fp16; do
    args=(--precision "$precision"); [ "$precision" = int8 ] && args+=(--calibration "$det/cal-$arch.json")
    for r in 1 2 3; do denox run "$det/$arch.onnx" -i "$det/in.pfm" -o "$det/$arch-$precision-$r.npy" --backend vulkan "${args[@]}" >/dev/null 2>&1 || echo "$arch $precision run $r FAILED"; done
    python3 -c 'import numpy as np,sys; a=[np.load(f) for f in sys.argv[2:]]; print(sys.argv[1], "bit-identical over 3 runs:", all(np.array_equal(a[0], b) for b in a[1:]))' "$arch $precision" "$det/$arch-$precision-"{1,2,3}.npy
  done
done
rm -rf "$det"
