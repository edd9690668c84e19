#!/usr/bin/env bash
# One device call: one-phase up2 with wide skips (SKIP_ROWS) on the H100.
# Here: build, then stage build/bin/denox, build/tests/kernels/denox_kernel_tests and
# build/bench/pipeline_stats/denox_pipeline_stats with ../shared/tools/device-prep.sh.
# There (carry [".device"]): source .device/env.sh; bash bench/results/2026-11-26-h100-skip-rows/run.sh
# [coop] tests, then for the shipped 9-channel path-tracer model, a random-weight 9-channel
# balanced model and the 3-channel benchmark model at 1920x1088: tune, bench heuristic and
# tuned (median of 30 after 5), per dispatch (both), registers of the heuristic plan's pipelines;
# then the small 3-channel model likewise.
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-/tmp/skip-rows}
work=/tmp/skip-rows-work
mkdir -p "$out" "$work"
export DENOX_CACHE_DIR=$work/cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
denox make-model --arch balanced --channels 9 --pad-crop "$work/balanced9.onnx" >/dev/null
denox make-model --arch balanced --channels 3 --pad-crop "$work/balanced3.onnx" >/dev/null
denox make-model --arch small --channels 3 --pad-crop "$work/small3.onnx" >/dev/null
# Warm-up: the first tune of a call otherwise measures at a lowered clock.
denox bench "$work/balanced3.onnx" --size 1920x1088 --tuning heuristic --runs 200 --warmup 20 >/dev/null 2>&1
for m in "$work/balanced3.onnx" "$work/balanced9.onnx" "$R/models/oidn_pathtracer_balanced.onnx" "$work/small3.onnx"; do
  n=$(basename "$m" .onnx)
  denox compile "$m" --size 1920x1088 --tuning measure --quiet > "$out/$n-compile.txt" 2>&1 || echo "$n: tuning FAILED"
  denox compile "$m" --size 1920x1088 --no-measure --plan "$work/$n.plan" --quiet >/dev/null 2>&1 &&
    denox_pipeline_stats "$work/$n.plan" > "$out/$n-pipeline-stats.txt" 2>&1
  sleep 3
  for t in heuristic measure; do
    denox bench "$m" --size 1920x1088 --tuning $t --runs 30 --warmup 5 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-32s %-9s median %.3f min %.3f dispatches %s" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"], j.get("dispatches", "?")))' "$n" $t
  done | tee -a "$out/summary.txt"
  for t in heuristic measure; do
    denox bench "$m" --size 1920x1088 --tuning $t --runs 20 --warmup 3 --per-dispatch > "$out/$n-per-dispatch-$t.txt" 2>&1
  done
done
denox_kernel_tests "[coop]" > "$out/coop-tests.txt" 2>&1
tail -3 "$out/coop-tests.txt"
