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
PIPELINE_STATS=1 bash "$R/bench/time_models.sh" "$out" 1920x1088 "$work/balanced3.onnx" "$work/balanced9.onnx" \
  "$R/models/oidn_pathtracer_balanced.onnx" "$work/small3.onnx"
denox_kernel_tests "[coop]" > "$out/coop-tests.txt" 2>&1
tail -3 "$out/coop-tests.txt"
