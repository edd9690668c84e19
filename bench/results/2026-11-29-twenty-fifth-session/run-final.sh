#!/usr/bin/env bash
# Twenty-fifth session, last device call (carry [".device"]): the final build's tuned plans.
# OIDN balanced 1920x1088 (int8 and fp16) and OIDN small 1280x720 (int8): tune on a fresh cache
# (denox compile), compile again from the cache (same schedule?), then denox bench of the tuned
# and the heuristic plan, twice in alternating order.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fifth-session/run-final.sh OUT
set -u
out=${1:-/tmp/out25f}; mkdir -p "$out"
work=/tmp/denox-final; mkdir -p "$work"
source bench/calibration_images.sh
calibration_images "$work" || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/info.txt" 2>&1
for case in "balanced 1920x1088 int8" "balanced 1920x1088 fp16" "small 1280x720 int8"; do
  set -- $case; arch=$1; size=$2; prec=$3; tag=$arch-$size-$prec
  model=$work/oidn-$arch.onnx
  [ -f "$model" ] || denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null || exit 1
  [ -f "$work/calib-$arch.json" ] || denox calibrate "$model" "${calib_args[@]}" -o "$work/calib-$arch.json" >/dev/null || exit 1
  args=("$model" --size "$size" --precision "$prec")
  [ "$prec" = int8 ] && args+=(--calibration "$work/calib-$arch.json")
  export DENOX_CACHE_DIR=$work/cache-$tag; rm -rf "$DENOX_CACHE_DIR"
  denox compile "${args[@]}" --quiet > "$out/schedule-$tag-fresh.txt" 2>&1
  denox compile "${args[@]}" --quiet > "$out/schedule-$tag-cached.txt" 2>&1
  strip_ms() { sed -E 's/ +[0-9.]+( \(est\.\))?$//' "$1" | grep -E '^/|^input'; }
  cmp -s <(strip_ms "$out/schedule-$tag-fresh.txt") <(strip_ms "$out/schedule-$tag-cached.txt") && same=same || same=DIFFERENT
  echo "$tag: schedule from the cache: $same; $(grep -h '^edges:' "$out/schedule-$tag-fresh.txt")"
  grep -h "^checked\|^time" "$out/schedule-$tag-fresh.txt" | sed "s/^/  /"
  for round in 1 2; do
    order="measure heuristic"; [ $round = 2 ] && order="heuristic measure"
    for t in $order; do
      denox bench "${args[@]}" --tuning $t --runs 30 --warmup 5 --json |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print("  %s round %s: median %.4f ms (min %.4f, max %.4f)" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"], j["max_ms"]))' "$t" "$round"
    done
  done
done
