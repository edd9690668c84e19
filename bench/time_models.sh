#!/usr/bin/env bash
# Times ONNX models at one size on the GPU machine, the heuristic plan against the tuned one.
# Usage (with .device/env.sh sourced): bash bench/time_models.sh OUT SIZE MODEL.onnx...
# Per model (NAME = the file name without .onnx), into OUT:
#   NAME-compile.txt              the tuned schedule (denox compile --tuning measure)
#   NAME-pipeline-stats.txt       with PIPELINE_STATS=1: registers and shared memory of the
#                                 heuristic plan's pipelines (denox_pipeline_stats)
#   summary.txt                   one line per tuning: median and min of 30 after 5 warm-ups
#   NAME-per-dispatch-TUNING.txt  serialized per-dispatch times, heuristic and measure
# Uses DENOX_CACHE_DIR as set by the caller; a tune's plan is timed from the cache by a later
# process (tuned in-process, the clock can still be down).
set -uo pipefail
out=$1 size=$2
shift 2
mkdir -p "$out"
# Warm-up: the first tune of a call otherwise measures at a lowered clock.
denox bench "$1" --size "$size" --tuning heuristic --runs 200 --warmup 20 >/dev/null 2>&1
for m in "$@"; do
  n=$(basename "$m" .onnx)
  denox compile "$m" --size "$size" --tuning measure --quiet > "$out/$n-compile.txt" 2>&1 || echo "$n: tuning FAILED"
  if [ "${PIPELINE_STATS:-0}" = 1 ]; then
    plan=$(mktemp)
    denox compile "$m" --size "$size" --no-measure --plan "$plan" --quiet >/dev/null 2>&1 &&
      denox_pipeline_stats "$plan" > "$out/$n-pipeline-stats.txt" 2>&1
    rm -f "$plan"
  fi
  sleep 3
  for t in heuristic measure; do
    denox bench "$m" --size "$size" --tuning $t --runs 30 --warmup 5 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-32s %-9s median %.3f min %.3f dispatches %s" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"], j.get("dispatches", "?")))' "$n" $t
  done | tee -a "$out/summary.txt"
  for t in heuristic measure; do
    denox bench "$m" --size "$size" --tuning $t --runs 20 --warmup 3 --per-dispatch > "$out/$n-per-dispatch-$t.txt" 2>&1
  done
done
