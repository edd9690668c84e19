#!/usr/bin/env bash
# Fortieth session, device call 1 (HEAD 145e298; carry [".device"], staged with the Release
# denox CLI and libdenox through ../shared/tools/device-prep.sh):
#   source .device/env.sh; bash bench/results/2026-12-02-fortieth-session/run1.sh $OUT
# The thirty-ninth session narrowed the input adapters' and Concat copies' bindings (b1bc520,
# 37d6333) and checked them under the layer, but timed nothing. This call re-times the plans:
# 1. bench/check_reference.sh: fp32, fp16 and int8 plans against the CPU reference at odd sizes;
# 2. bench/run_gpu.sh, balanced at 1920x1088 and 1280x720, PyTorch eager and CUDA graphs beside.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/wall.txt"
PRECISIONS="fp32 fp16 int8" ARCHS=balanced SIZES="317x203 957x541" timeout 240 bash bench/check_reference.sh "$out/reference.txt" > "$out/reference-log.txt" 2>&1
echo "reference rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
OUT=$out/bench ARCHS=balanced SIZES="1920x1088 1280x720" timeout "${TIMEOUT:-330}" bash bench/run_gpu.sh > "$out/run.txt" 2>&1
echo "run_gpu rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
tar czf "$out/bench.tgz" -C "$out" bench && rm -rf "$out/bench"
