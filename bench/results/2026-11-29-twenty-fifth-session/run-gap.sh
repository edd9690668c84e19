#!/usr/bin/env bash
# Twenty-fifth session, device call 1 (carry [".device"]): where the heuristic plans still trail
# the tuned ones. Per network, size and precision: both schedules (denox compile, configurations
# printed) and both plans per dispatch (denox bench --per-dispatch), one cache per case.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fifth-session/run-gap.sh OUT
set -u
out=${1:-/tmp/out25}; mkdir -p "$out"
work=/tmp/denox-gap; mkdir -p "$work"
source bench/calibration_images.sh
calibration_images "$work" || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/info.txt" 2>&1
for arch in balanced small; do
  model=$work/oidn-$arch.onnx
  denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null || exit 1
  denox calibrate "$model" "${calib_args[@]}" -o "$work/calib-$arch.json" >/dev/null || exit 1
  for case in "1280x720 int8" "1280x720 fp16" "1920x1088 int8"; do
    set -- $case; size=$1; prec=$2; tag=$arch-$size-$prec
    args=("$model" --size "$size" --precision "$prec")
    [ "$prec" = int8 ] && args+=(--calibration "$work/calib-$arch.json")
    export DENOX_CACHE_DIR=$work/cache-$tag; rm -rf "$DENOX_CACHE_DIR"
    denox compile "${args[@]}" --tuning heuristic --quiet > "$out/schedule-$tag-heuristic.txt" 2>&1
    denox compile "${args[@]}" --tuning measure --quiet > "$out/schedule-$tag-measure.txt" 2>&1
    for round in 1 2; do
      for t in heuristic measure; do
        denox bench "${args[@]}" --tuning $t --runs 30 --warmup 5 --per-dispatch > "$out/per-dispatch-$tag-$t-$round.txt" 2>&1
      done
    done
    grep -H "GPU median" "$out"/per-dispatch-$tag-*.txt
  done
done
