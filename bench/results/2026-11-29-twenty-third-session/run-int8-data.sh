#!/usr/bin/env bash
# Twenty-third session, device call 4: where the int8 heuristic plans lose to tuned, per layer.
# For OIDN balanced and small (calibrated as bench/run_gpu.sh does), at 1280x720, 1920x1088 and
# 3840x2160: the heuristic schedule (`denox compile --no-measure`), the tuned one (`denox compile
# --tuning measure`), and both plans per dispatch (`denox bench --per-dispatch`).
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-third-session/run-int8-data.sh OUT
set -u
out=${1:-/tmp/out23}; mkdir -p "$out"
work=/tmp/i8; rm -rf $work; mkdir -p $work
export DENOX_CACHE_DIR=$work/cache
source bench/calibration_images.sh
calibration_images "$work"
for arch in balanced small; do
  denox make-model --arch $arch --channels 3 --pad-crop $work/$arch.onnx >/dev/null
  denox calibrate $work/$arch.onnx "${calib_args[@]}" -o $work/cal-$arch.json >/dev/null || echo "$arch calibration FAILED"
  for size in 1280x720 1920x1088 3840x2160; do
    args=($work/$arch.onnx --size $size --precision int8 --calibration $work/cal-$arch.json)
    denox compile "${args[@]}" --no-measure --quiet > "$out/compile-$arch-$size-heuristic.txt" 2>&1
    denox compile "${args[@]}" --tuning measure --quiet > "$out/compile-$arch-$size-measure.txt" 2>&1
    sleep 2
    for tuning in heuristic measure; do
      denox bench "${args[@]}" --tuning $tuning --runs 20 --warmup 3 --per-dispatch > "$out/per-dispatch-$arch-$size-$tuning.txt" 2>&1
      echo "$arch $size int8 $tuning: $(grep -m1 'GPU median' "$out/per-dispatch-$arch-$size-$tuning.txt")"
    done
  done
done
