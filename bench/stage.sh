#!/usr/bin/env bash
# Builds a stripped Release denox (CLI + libdenox.so) and stages it for the GPU machine with
# ../shared/tools/device-prep.sh, with denox_pipeline_stats (bench/layer_report.sh reads it).
# Then run, with the device tool (carry [".device"]):
#   source .device/env.sh; bash bench/run_gpu.sh     (or bash bench/layer_report.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DDENOX_BUILD_TESTS=OFF >/dev/null
cmake --build build-release --target denox denox_pipeline_stats
stats=$(find build-release/bench/pipeline_stats -maxdepth 1 -name denox_pipeline_stats -type f)
strip build-release/bin/denox build-release/lib/libdenox.so.*.*.* "$stats"
bash ../shared/tools/device-prep.sh build-release/bin/denox "$stats"
