#!/usr/bin/env bash
# Twenty-sixth session, device call 2 (carry [".device"]): OIDN balanced 1920x1088, denox fp16
# and int8 (heuristic and tuned, per dispatch) beside PyTorch (eager, CUDA graph, torch.compile
# max-autotune) in one call.
# Run: source .device/env.sh; mkdir -p $OUT/headline; OUT=$OUT/headline ARCHS=balanced SIZES=1920x1088 \
#        timeout 570 bash bench/run_gpu.sh --compile > $OUT/headline/headline.txt 2>&1
set -u
out=${1:-/tmp/out26h}; mkdir -p "$out"
OUT=$out ARCHS=balanced SIZES=1920x1088 timeout 570 bash bench/run_gpu.sh --compile > "$out/headline.txt" 2>&1
