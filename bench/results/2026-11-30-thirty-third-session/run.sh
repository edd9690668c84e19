#!/usr/bin/env bash
# Thirty-third session (0.4.1): no kernel or plan changed; plan loads now read each pipeline's
# SPIR-V (shared memory, cooperative-matrix types) and check it against the device, and the CLI's
# run --backend vulkan and bench take plan files. One device call, carry [".device"]:
#   source .device/env.sh; bash bench/results/2026-11-30-thirty-third-session/run.sh $OUT
# 1. bench/run_gpu.sh for balanced at 1920x1088 with PyTorch eager and CUDA graphs beside it:
#    the headline, the per-dispatch tables and the CPU reference check.
# 2. The four plans of that run (fp16 and int8, heuristic and tuned) written with
#    `denox compile --plan` and benchmarked as plan files: each goes through
#    denox_model_load_plan and its SPIR-V check on this GPU, and should time as from the cache.
set -u
out=$1; mkdir -p "$out"
start=$(date +%s)
OUT=$out/hd ARCHS=balanced SIZES="1920x1088" timeout "${TIMEOUT:-300}" bash bench/run_gpu.sh > "$out/run-1920x1088.txt" 2>&1
echo "1920x1088 rc=$? wall_s=$(( $(date +%s) - start ))" | tee "$out/wall.txt"
work=/tmp/denox-bench-work   # run_gpu.sh's models, calibrations and cache
export DENOX_CACHE_DIR="$work/cache"
{
  echo "## plan files (denox compile --plan from the cache above, then denox bench PLAN: denox_model_load_plan), balanced 1920x1088"
  printf '%-9s %-10s %10s %10s %10s %12s\n' precision tuning median_ms min_ms max_ms plan_bytes
  for precision in fp16 int8; do
    args=(--precision "$precision")
    if [ "$precision" = int8 ]; then args+=(--calibration "$work/calibration-balanced.json"); fi
    for tuning in heuristic measure; do
      plan="$out/balanced-1920x1088-$precision-$tuning.dnxplan"
      denox compile "$work/models/oidn-balanced.onnx" --size 1920x1088 "${args[@]}" --tuning "$tuning" --plan "$plan" --quiet > /dev/null 2>&1 ||
        { echo "$precision $tuning: compile --plan FAILED"; continue; }
      json=$(denox bench "$plan" --size 1920x1088 --runs 30 --warmup 5 --no-cache --json 2> "$out/bench-$precision-$tuning.err") ||
        { echo "$precision $tuning: bench of the plan file FAILED: $(tail -3 "$out/bench-$precision-$tuning.err")"; continue; }
      python3 -c 'import json,sys; j=json.loads(sys.argv[1])
print("%-9s %-10s %10.3f %10.3f %10.3f %12d" % (sys.argv[2], sys.argv[3], j["median_ms"], j["min_ms"], j["max_ms"], int(sys.argv[4])))' \
        "$json" "$precision" "$tuning" "$(stat -c %s "$plan")"
    done
  done
} > "$out/plan-files.txt" 2>&1
cat "$out/plan-files.txt"
echo "plan files total wall_s=$(( $(date +%s) - start ))" | tee -a "$out/wall.txt"
rm -f "$out"/*.dnxplan   # (large; the table above is what comes back)
