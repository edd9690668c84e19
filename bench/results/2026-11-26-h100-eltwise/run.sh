#!/usr/bin/env bash
# One device call: elementwise chains in one dispatch (eltwise) on the H100.
# Here: build, then stage build/bin/denox and build/tests/kernels/denox_kernel_tests with
# ../shared/tools/device-prep.sh. There (carry [".device"]):
#   source .device/env.sh; bash bench/results/2026-11-26-h100-eltwise/run.sh
# The [eltwise] and [binary]/[unary] tests on this GPU, then the shipped path-tracer model and the
# 3-channel benchmark model at 1920x1088: tune, bench heuristic and tuned (median of 30 after 5),
# per dispatch (both).
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-/tmp/eltwise}
work=/tmp/eltwise-work
mkdir -p "$out" "$work"
export DENOX_CACHE_DIR=$work/cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
denox_kernel_tests "[eltwise],[binary],[unary]" 2>&1 | tail -2 | tee "$out/tests.txt"
denox make-model --arch balanced --channels 3 --pad-crop "$work/balanced3.onnx" >/dev/null
# Warm-up: the first tune of a call otherwise measures at a lowered clock.
denox bench "$work/balanced3.onnx" --size 1920x1088 --tuning heuristic --runs 200 --warmup 20 >/dev/null 2>&1
for m in "$R/models/oidn_pathtracer_balanced.onnx" "$work/balanced3.onnx"; do
  n=$(basename "$m" .onnx)
  denox compile "$m" --size 1920x1088 --tuning measure --quiet > "$out/$n-compile.txt" 2>&1 || echo "$n: tuning FAILED"
  sleep 3
  for t in heuristic measure; do
    denox bench "$m" --size 1920x1088 --tuning $t --runs 30 --warmup 5 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-32s %-9s median %.3f min %.3f dispatches %s" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"], j.get("dispatches", "?")))' "$n" $t
  done | tee -a "$out/summary.txt"
  for t in heuristic measure; do
    denox bench "$m" --size 1920x1088 --tuning $t --runs 20 --warmup 3 --per-dispatch > "$out/$n-per-dispatch-$t.txt" 2>&1
  done
done
grep -E "Mul|Div|Clip|eltwise|sum" "$out/oidn_pathtracer_balanced-per-dispatch-measure.txt"
