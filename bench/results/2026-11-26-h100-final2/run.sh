#!/usr/bin/env bash
# One device call at the end of the 2026-11-26 (next) session: the benchmark table beside
# PyTorch (bench/run_gpu.sh), then the shipped path-tracer model against the CPU reference and
# timed (the eltwise run.sh of the day before).
# Here: build, then stage build/bin/denox with ../shared/tools/device-prep.sh. There (carry
# [".device"]): source .device/env.sh; bash bench/results/2026-11-26-h100-final2/run.sh
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-/tmp/final2}
mkdir -p "$out/table" "$out/pathtracer"
OUT=$out/table bash "$R/bench/run_gpu.sh" > "$out/table/run_gpu.txt" 2>&1
[ "${SKIP_PATHTRACER:-0}" = 1 ] || OUT=$out/pathtracer bash "$R/bench/results/2026-11-26-h100-eltwise/run.sh" > "$out/pathtracer/run.txt" 2>&1
# The device tool brings back a limited number of files: one archive of everything.
tar -C "$out" -czf "$out/../final2.tgz" . && rm -rf "$out"/* && mv "$out/../final2.tgz" "$out/"
