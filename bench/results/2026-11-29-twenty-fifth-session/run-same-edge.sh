#!/usr/bin/env bash
# Twenty-fifth session, device call 2 (carry [".device"]): identical edges timed once.
# 1. OIDN small and balanced, int8, 1920x1088: compile fresh, then again from the cache: the
#    schedules must match step for step (they did not before: run-gap.sh's small int8).
# 2. OIDN small, int8, 1280x720, where the whole-plan check kept the heuristic plan (tuned 0.489
#    against 0.477 ms): the tuned plan kept by force (DENOX_TEST_PLAN_CHECK=tuned) and timed per
#    dispatch beside the heuristic one, to see which dispatches run slower in the network than
#    their edges did alone.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fifth-session/run-same-edge.sh OUT
set -u
out=${1:-/tmp/out25b}; mkdir -p "$out"
work=/tmp/denox-same; mkdir -p "$work"
source bench/calibration_images.sh
calibration_images "$work" || exit 1
for arch in small balanced; do
  model=$work/oidn-$arch.onnx
  denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null || exit 1
  denox calibrate "$model" "${calib_args[@]}" -o "$work/calib-$arch.json" >/dev/null || exit 1
  args=("$model" --size 1920x1088 --precision int8 --calibration "$work/calib-$arch.json")
  export DENOX_CACHE_DIR=$work/cache-$arch; rm -rf "$DENOX_CACHE_DIR"
  denox compile "${args[@]}" --quiet > "$out/schedule-$arch-1920x1088-int8-fresh.txt" 2>&1
  denox compile "${args[@]}" --quiet > "$out/schedule-$arch-1920x1088-int8-cached.txt" 2>&1
  strip_ms() { sed -E 's/ +[0-9.]+( \(est\.\))?$//' "$1" | grep -E '^/|^input|^  /'; }
  if diff <(strip_ms "$out/schedule-$arch-1920x1088-int8-fresh.txt") <(strip_ms "$out/schedule-$arch-1920x1088-int8-cached.txt") > "$out/diff-$arch.txt"; then
    echo "$arch 1920x1088 int8: same schedule fresh and from the cache"
  else
    echo "$arch 1920x1088 int8: SCHEDULES DIFFER (diff-$arch.txt)"
  fi
  grep -h "^edges:\|^checked\|^time" "$out/schedule-$arch-1920x1088-int8-fresh.txt" | sed "s/^/$arch fresh: /"
done
model=$work/oidn-small.onnx
args=("$model" --size 1280x720 --precision int8 --calibration "$work/calib-small.json")
export DENOX_CACHE_DIR=$work/cache-small-720; rm -rf "$DENOX_CACHE_DIR"
DENOX_TEST_PLAN_CHECK=tuned denox compile "${args[@]}" --quiet > "$out/schedule-small-1280x720-int8-forced-tuned.txt" 2>&1
grep -h "^checked" "$out/schedule-small-1280x720-int8-forced-tuned.txt"
for round in 1 2; do
  for t in heuristic measure; do
    denox bench "${args[@]}" --tuning $t --runs 30 --warmup 5 --per-dispatch > "$out/per-dispatch-small-1280x720-int8-$t-$round.txt" 2>&1
    grep -H "GPU median" "$out/per-dispatch-small-1280x720-int8-$t-$round.txt"
  done
done
