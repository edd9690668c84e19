#!/usr/bin/env bash
# Twenty-third session, device call 2 (after the first call's per-dispatch tables narrowed the
# rules): heuristic fp16 plans against the CPU reference; same-call A/B of heuristic fp16 plans,
# before (.device/lib-a: 04a22a0) and after, every network and size; then tuned fp16 plans, each
# build tuning afresh, at 1920x1088.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-third-session/run-tuned.sh OUT
set -u
out=${1:-/tmp/out23}; mkdir -p "$out"
bash bench/check_reference.sh "$out/correctness.txt"
TUNING=heuristic PRECISIONS=fp16 ARCHS="balanced small" SIZES="1280x720 1920x1088 3840x2160" bash bench/ab_libs.sh "$out/heuristic-fp16"
TUNING=measure PRECISIONS=fp16 ARCHS="balanced small" SIZES=1920x1088 bash bench/ab_libs.sh "$out/tuned-fp16"
