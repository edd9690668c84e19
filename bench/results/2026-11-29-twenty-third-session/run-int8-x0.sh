#!/usr/bin/env bash
# Twenty-third session, device call 7: the int8 heuristic plans' dec_conv1a on A_DIRECT reading
# an fp16 X0. Same-call A/B of heuristic int8 plans before (.device/lib-a: 04a22a0) and after,
# both networks, every size; then the int8 quality through the CLI on the shipped model
# (bench/int8_quality_cli.sh, 8 held-out scenes), whose heuristic int8 plan changes the same way.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-third-session/run-int8-x0.sh OUT
set -u
out=${1:-/tmp/out23}; mkdir -p "$out"
TUNING=heuristic PRECISIONS=int8 ARCHS="balanced small" SIZES="1280x720 1920x1088 3840x2160" bash bench/ab_libs.sh "$out/int8-x0"
TEST_COUNT=8 OUT="$out/int8-quality" bash bench/int8_quality_cli.sh > "$out/int8-quality.txt" 2>&1 || echo "int8 quality FAILED"
tail -8 "$out/int8-quality.txt"
