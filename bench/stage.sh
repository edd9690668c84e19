#!/usr/bin/env bash
# Builds a stripped Release denox (CLI + libdenox.so) and stages it for the GPU machine with
# ../shared/tools/device-prep.sh, with denox_pipeline_stats (bench/layer_report.sh reads it).
# Then run, with the device tool (carry [".device"]):
#   source .device/env.sh; bash bench/run_gpu.sh     (or bash bench/layer_report.sh)
# --validation also stages the Khronos validation layer 1.4 into .device/vvl
# (scripts/fetch-validation-layer.sh), for bench/validate_gpu.sh; VVL_SUITE=sid takes Debian
# unstable's layer instead, which GPUAV=1 needs (bench/gpuav.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
validation=0
case "${1:-}" in
  --validation) validation=1 ;;
  "") ;;
  *) echo "usage: $0 [--validation]" >&2; exit 2 ;;
esac
bash scripts/setup-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DDENOX_BUILD_TESTS=OFF >/dev/null
cmake --build build-release --target denox denox_pipeline_stats
stats=$(find build-release/bench/pipeline_stats -maxdepth 1 -name denox_pipeline_stats -type f)
strip build-release/bin/denox build-release/lib/libdenox.so.*.*.* "$stats"
bash ../shared/tools/device-prep.sh build-release/bin/denox "$stats"
[ "$validation" = 0 ] || bash scripts/fetch-validation-layer.sh .device/vvl
