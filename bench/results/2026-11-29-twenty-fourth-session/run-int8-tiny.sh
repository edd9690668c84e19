#!/usr/bin/env bash
# Twenty-fourth session, device call 5 (carry [".device"]): the int8 heuristic's tiny plain convs
# (OIDN's 1/16 layers enc_conv5a/5b) on 8x16 tiles, 4 x 1 subgroups. Same-call A/B of heuristic
# int8 plans before (.device/lib-a: d4074c3) and after, both networks, every size.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fourth-session/run-int8-tiny.sh OUT
set -u
out=${1:-/tmp/out24}; mkdir -p "$out"
TUNING=heuristic PRECISIONS=int8 ARCHS="balanced small" SIZES="1280x720 1920x1088 3840x2160" bash bench/ab_libs.sh "$out/int8-tiny" |
  tee "$out/int8-tiny-summary.txt"
