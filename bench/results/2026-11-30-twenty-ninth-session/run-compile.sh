#!/usr/bin/env bash
# Twenty-ninth session: torch.compile max-autotune beside denox at the networks and sizes the
# earlier sessions ran without it (only balanced 1920x1088 had it). One device call per
# argument set, carry [".device"]:
#   source .device/env.sh; bash bench/results/2026-11-30-twenty-ninth-session/run-compile.sh $OUT/NAME "ARCHS" "SIZES"
# bench/run_gpu.sh --compile for those networks and sizes (denox fp16 and int8, heuristic and
# tuned; PyTorch eager, CUDA graph and torch.compile max-autotune), under a timeout that leaves
# the call's 600 s room to bring the output back. run.txt: the output; wall.txt: seconds.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
OUT=$out ARCHS=$2 SIZES=$3 timeout "${TIMEOUT:-570}" bash bench/run_gpu.sh --compile > "$out/run.txt" 2>&1
echo "rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
tail -n 12 "$out/run.txt"
