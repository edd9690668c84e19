#!/usr/bin/env bash
# Thirty-fifth session (0.4.3): denox's own device now enables vulkanMemoryModel and
# vulkanMemoryModelDeviceScope (the cooperative-matrix shaders declare VulkanMemoryModel), and
# only such devices get cooperative-matrix plans. No shader changed. One device call, carry
# [".device"]:
#   source .device/env.sh; bash bench/results/2026-12-01-thirty-fifth-session/run.sh $OUT
# 1. `denox info`: the device's features as denox's own device enables them.
# 2. bench/check_reference.sh: fp32, fp16 and int8 plans against the CPU reference at odd sizes.
# 3. bench/run_gpu.sh for balanced at 1920x1088 with PyTorch eager and CUDA graphs beside it.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
denox info > "$out/info.txt" 2>&1
echo "info rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
PRECISIONS="fp32 fp16 int8" ARCHS=balanced SIZES="317x203 957x541" timeout 240 bash bench/check_reference.sh "$out/reference.txt" > "$out/reference-log.txt" 2>&1
echo "reference rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
OUT=$out/hd ARCHS=balanced SIZES="1920x1088" timeout "${TIMEOUT:-200}" bash bench/run_gpu.sh > "$out/run-1920x1088.txt" 2>&1
echo "1920x1088 rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
tar czf "$out/hd.tgz" -C "$out" hd && rm -rf "$out/hd"
