#!/usr/bin/env bash
# Which configuration each dispatch of the tuned OIDN plans runs, its time, and what the driver
# reports for its pipeline (registers, shared memory, binary size): one markdown table per
# precision (bench/layer_report.py says what the columns mean). Issue 4 asks which configs win
# per layer and why the slowest is slow; this is the table that answers it on a given GPU.
#
# Here:   bash bench/stage.sh    (stages denox and denox_pipeline_stats into .device/)
# There:  source .device/env.sh; bash bench/layer_report.sh    (device tool: carry [".device"])
# Knobs: ARCH (balanced), SIZE (1920x1088), PRECISIONS ("fp16 int8").
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-layer-report}
work=/tmp/denox-layer-work
arch=${ARCH:-balanced}
size=${SIZE:-1920x1088}
precisions=${PRECISIONS:-fp16 int8}
mkdir -p "$out" "$work"
export DENOX_CACHE_DIR="$work/cache"
model="$work/oidn-$arch.onnx"
denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null || exit 1
source bench/calibration_images.sh
if [[ " $precisions " == *" int8 "* ]]; then
  calibration_images "$work"
  denox calibrate "$model" "${calib_args[@]}" -o "$work/calibration.json" >/dev/null || { echo "calibration FAILED"; exit 1; }
fi
status=0
for precision in $precisions; do
  prec_args=(--precision "$precision")
  [ "$precision" = int8 ] && prec_args+=(--calibration "$work/calibration.json")
  # Tuned in a process of its own (as bench/run_gpu.sh does), so the timed one loads it from the cache.
  denox compile "$model" --size "$size" "${prec_args[@]}" --quiet --plan "$work/$precision.plan" >/dev/null ||
    { echo "$precision: compile FAILED"; status=1; continue; }
  sleep 5
  denox bench "$model" --size "$size" "${prec_args[@]}" --tuning measure --runs 30 --warmup 5 --per-dispatch --json \
    >"$out/$precision-bench.json" || { echo "$precision: bench FAILED"; status=1; continue; }
  denox_pipeline_stats "$work/$precision.plan" >"$out/$precision-pipeline-stats.txt" ||
    { echo "$precision: denox_pipeline_stats FAILED"; status=1; continue; }
  echo "## $precision"
  python3 bench/layer_report.py --arch "$arch" --size "$size" "$out/$precision-bench.json" "$out/$precision-pipeline-stats.txt" |
    tee "$out/$precision-layers.md"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "$precision: layer_report.py FAILED"; status=1; }
  echo
done
exit $status
