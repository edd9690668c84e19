#!/usr/bin/env bash
# Thirtieth session: no kernel or plan changed; the runtime now refuses extents whose tensors
# pass maxStorageBufferRange or 2^31 elements, and set_extent/bind_* are all or nothing. One
# device call, carry [".device"]:
#   source .device/env.sh; bash bench/results/2026-11-30-thirtieth-session/run.sh $OUT
# 1. bench/run_gpu.sh (no PyTorch) for balanced at 1920x1088 and 3840x2160: the headline, the
#    per-dispatch tables and the check against the CPU reference, at this HEAD.
# 2. The device's maxStorageBufferRange, and balanced at 7680x4320 (fp16 and int8, heuristic):
#    a time, or the new refusal naming the tensor.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
OUT=$out ARCHS=balanced SIZES="1920x1088 3840x2160" DENOX_SKIP_TORCH=1 timeout "${TIMEOUT:-420}" bash bench/run_gpu.sh > "$out/run.txt" 2>&1
echo "run_gpu rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
{
  echo "## maxStorageBufferRange"
  (vulkaninfo 2>/dev/null | grep -m1 maxStorageBufferRange) || echo "(no vulkaninfo)"
  echo "## balanced 7680x4320, heuristic"
  work=/tmp/denox-bench-work
  export DENOX_CACHE_DIR="$work/cache"
  for precision in fp16 int8; do
    args=(--precision "$precision")
    [ "$precision" = int8 ] && args+=(--calibration "$work/calibration-balanced.json")
    echo "# $precision"
    timeout 120 denox bench "$work/models/oidn-balanced.onnx" --size 7680x4320 "${args[@]}" --tuning heuristic --runs 10 --warmup 2 2>&1 | tail -n 4
    echo "rc=$?"
  done
} > "$out/8k.txt" 2>&1
echo "total wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
cat "$out/8k.txt"
grep -A12 "^arch" "$out/run.txt" | head -8
