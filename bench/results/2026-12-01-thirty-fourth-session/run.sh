#!/usr/bin/env bash
# Thirty-fourth session (0.4.2): no kernel or plan changed; crash-journal timing markers are
# committed synced, caches on network file systems use the rollback journal. One device call,
# carry [".device"]:
#   source .device/env.sh; bash bench/results/2026-12-01-thirty-fourth-session/run.sh $OUT
# 1. bench/tune_under_load.sh: tunes beside a GPU load (another process), their plans timed on
#    the quiet GPU, and what a synced commit costs on this machine.
# 2. bench/run_gpu.sh for balanced at 1920x1088 with PyTorch eager and CUDA graphs beside it.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
timeout 400 bash bench/tune_under_load.sh "$out/load" > "$out/tune-under-load.txt" 2>&1
echo "tune under load rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
# (the device tool brings back a limited number of files: the summaries, and the rest packed)
cp "$out"/load/{fsync,tunes,plans}.txt "$out/" 2>/dev/null
tar czf "$out/load.tgz" -C "$out" load && rm -rf "$out/load"
OUT=$out/hd ARCHS=balanced SIZES="1920x1088" timeout "${TIMEOUT:-180}" bash bench/run_gpu.sh > "$out/run-1920x1088.txt" 2>&1
echo "1920x1088 rc=$? wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
