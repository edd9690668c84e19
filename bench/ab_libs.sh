#!/usr/bin/env bash
# A/B of two libdenox builds on one GPU: how a change to select, the cost model or the lowering
# moves the network's time, without the machine-to-machine spread (bench/RESULTS.md quotes ~1%
# between H100s).
#
# Here:   the new build staged as usual (../shared/tools/device-prep.sh /tmp/denox ...), the
#         other build's stripped libdenox.so.0 copied to .device/lib-a/.
# There:  source .device/env.sh; bash bench/ab_libs.sh [OUT]   (device tool: carry [".device"])
# Knobs: ARCHS (balanced; ARCH too), SIZES (1920x1088; SIZE too), PRECISIONS ("int8 fp16"),
# ROUNDS (2), TUNING (measure, or heuristic: each build's own heuristic plan, nothing tuned).
# Per network, size and precision, with TUNING=measure: the staged build (B) tunes, then build A
# schedules from a copy of that cache without its plans (every edge from the cache where both
# builds have the same shaders: check A's "measured" count). Then both run `denox bench` in
# turn, ROUNDS times, alternating which goes first. A summary, per-dispatch tables and (measure)
# the compile outputs land in OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-${OUT:-/tmp/denox-ab}}
tuning=${TUNING:-measure} precisions=${PRECISIONS:-int8 fp16}
[ "$tuning" = measure ] || [ "$tuning" = heuristic ] || { echo "ab_libs: TUNING is measure or heuristic, not '$tuning'"; exit 1; }
work=/tmp/denox-ab-work
lib_a=$PWD/.device/lib-a
[ -f "$lib_a/libdenox.so.0" ] || { echo "ab_libs: no $lib_a/libdenox.so.0 (build A's library)"; exit 1; }
mkdir -p "$out" "$work/models"
source bench/calibration_images.sh
[[ " $precisions " == *" int8 "* ]] && calibration_images "$work"
run_a() { LD_LIBRARY_PATH="$lib_a:$LD_LIBRARY_PATH" DENOX_CACHE_DIR="$work/cache-a" "$@"; }
run_b() { DENOX_CACHE_DIR="$work/cache-b" "$@"; }
for arch in ${ARCHS:-${ARCH:-balanced}}; do
model=$work/models/oidn-$arch.onnx
denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null || { echo "ab_libs: make-model failed"; exit 1; }
if [[ " $precisions " == *" int8 "* ]]; then
  denox calibrate "$model" "${calib_args[@]}" -o "$work/calibration.json" >/dev/null || { echo "ab_libs: calibration failed"; exit 1; }
fi
for size in ${SIZES:-${SIZE:-1920x1088}}; do
for precision in $precisions; do
  args=("$model" --size "$size" --precision "$precision")
  [ "$precision" = int8 ] && args+=(--calibration "$work/calibration.json")
  rm -rf "$work/cache-a" "$work/cache-b"
  tag=$arch-$size-$precision
  if [ "$tuning" = measure ]; then
    run_b denox compile "${args[@]}" --tuning measure --quiet > "$out/compile-$tag-b.txt" 2>&1 || echo "$tag: B's tuning FAILED"
    cp -r "$work/cache-b" "$work/cache-a"
    python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DELETE FROM plans"); c.commit()' "$work/cache-a/cache.sqlite3"
    run_a denox compile "${args[@]}" --tuning measure --quiet > "$out/compile-$tag-a.txt" 2>&1 || echo "$tag: A's schedule FAILED"
    grep -h "edges:" "$out/compile-$tag-a.txt" | sed 's/^/A /'
  fi
  sleep 3
  for round in $(seq "${ROUNDS:-2}"); do
    order="a b"; [ $((round % 2)) = 0 ] && order="b a"  # neither build always goes first
    for build in $order; do
      "run_$build" denox bench "${args[@]}" --tuning "$tuning" --runs 30 --warmup 5 --json |
        python3 -c 'import json,sys; j=json.load(sys.stdin); print("%s %s %s round %s  median %.4f  min %.4f  max %.4f ms  plans compiled %d" % (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], j["median_ms"], j["min_ms"], j["max_ms"], j["plans_compiled"]))' \
          "$arch $size" "$precision $tuning" "$build" "$round" | tee -a "$out/summary.txt"
    done
  done
  for build in a b; do
    "run_$build" denox bench "${args[@]}" --tuning "$tuning" --runs 20 --warmup 3 --per-dispatch > "$out/per-dispatch-$tag-$build.txt" 2>&1
  done
done
done
done
