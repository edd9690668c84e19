#!/usr/bin/env bash
# Twenty-sixth session, device call 1 (carry [".device"]): the tuner after the clock keeper's
# down-share moved into ClockKeeper (no change meant). bench/measure_noise.sh on the shipped
# denoiser (int8, 1920x1088: two tunings on fresh caches, edge by edge), then OIDN balanced
# 1920x1088 int8 tuned on a fresh cache and compiled again from it (same schedule?).
# Run: source .device/env.sh; bash bench/results/2026-11-30-twenty-sixth-session/run-tuner.sh OUT
set -u
out=${1:-/tmp/out26t}; mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$out/info.txt" 2>&1
OUT=$out/noise WORK=/tmp/denox-noise26 bash bench/measure_noise.sh > "$out/noise.txt" 2>&1 || echo "measure_noise FAILED" >> "$out/noise.txt"
work=/tmp/denox-tuner26; mkdir -p "$work"
source bench/calibration_images.sh
calibration_images "$work" || exit 1
model=$work/oidn-balanced.onnx
denox make-model --arch balanced --channels 3 --pad-crop "$model" >/dev/null || exit 1
denox calibrate "$model" "${calib_args[@]}" -o "$work/calib.json" >/dev/null || exit 1
args=("$model" --size 1920x1088 --precision int8 --calibration "$work/calib.json")
export DENOX_CACHE_DIR=$work/cache; rm -rf "$DENOX_CACHE_DIR"
denox compile "${args[@]}" > "$out/schedule-fresh.txt" 2>&1
denox compile "${args[@]}" > "$out/schedule-cached.txt" 2>&1
strip_ms() { sed -E 's/ +[0-9.]+( \(est\.\))?$//' "$1" | grep -E '^/|^input'; }
cmp -s <(strip_ms "$out/schedule-fresh.txt") <(strip_ms "$out/schedule-cached.txt") && same=same || same=DIFFERENT
echo "balanced 1920x1088 int8: schedule from the cache: $same; $(grep -h '^edges:' "$out/schedule-fresh.txt")" | tee "$out/summary.txt"
grep -h "^checked\|^time\|timed again\|same edge" "$out/schedule-fresh.txt" | sed "s/^/  /" | tee -a "$out/summary.txt"
for round in 1 2; do
  order="measure heuristic"; [ $round = 2 ] && order="heuristic measure"
  for t in $order; do
    denox bench "${args[@]}" --tuning $t --runs 30 --warmup 5 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("  %s round %s: median %.4f ms (min %.4f, max %.4f)" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"], j["max_ms"]))' "$t" "$round" | tee -a "$out/summary.txt"
  done
done
tail -25 "$out/noise.txt"
