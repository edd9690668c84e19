#!/usr/bin/env bash
# Second call: variants of dec_conv1a / dec_conv2a on the 9- and 3-channel balanced models
# (bench/conv_layers.cpp DENOX_BENCH_VARIANTS), registers of each variant's plan.
set -uo pipefail
D=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/skip-rows}
mkdir -p "$out/plans9" "$out/plans3"
for c in 9 3; do
  DENOX_BENCH_CHANNELS=$c DENOX_BENCH_SWEEP=0 DENOX_BENCH_LAYERS=0 DENOX_BENCH_VARIANTS=$D/variants-${c}ch.txt \
    DENOX_BENCH_PLAN_DIR=$out/plans$c denox_kernel_tests "[coop-bench]" > "$out/variants-${c}ch.txt" 2>&1
  for p in "$out"/plans$c/*.plan; do echo "## $(basename $p)"; denox_pipeline_stats "$p" | grep -A3 "dec_conv1a\|dec_conv2a" | grep -o "Register Count=[0-9]*\|Shared Memory Size=[0-9]*" | tr '\n' ' '; echo; done > "$out/registers-${c}ch.txt"
  rm -rf "$out/plans$c"
done
