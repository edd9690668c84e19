#!/usr/bin/env bash
# Thirty-first session: no kernel or plan changed; import checks node arity against libonnx's
# schemas, select is iterative, the GPU path caps networks at 1024 operators, plans are checked
# for shared payloads, extents and subgroup width. One device call, carry [".device"]:
#   source .device/env.sh; bash bench/results/2026-11-30-thirty-first-session/run.sh $OUT
# bench/run_gpu.sh for balanced at 1920x1088 (with PyTorch eager and CUDA graphs beside it) and
# 3840x2160 (without): the headline, the per-dispatch tables and the CPU reference check.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
OUT=$out/hd ARCHS=balanced SIZES="1920x1088" timeout "${TIMEOUT:-300}" bash bench/run_gpu.sh > "$out/run-1920x1088.txt" 2>&1
echo "1920x1088 rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
OUT=$out/4k ARCHS=balanced SIZES="3840x2160" DENOX_SKIP_TORCH=1 timeout "${TIMEOUT:-300}" bash bench/run_gpu.sh > "$out/run-3840x2160.txt" 2>&1
echo "3840x2160 rc=$? total wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
