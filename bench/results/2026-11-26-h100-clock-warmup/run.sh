#!/usr/bin/env bash
# Does the measure step's clock warm-up (MeasureOptions::clock_warmup_ms) keep a cold-GPU tune
# from picking slower configurations? Tunes OIDN small and balanced at 3840x2160 on an idle GPU
# (fresh cache, 20 s idle first), then times heuristic and tuned plans after a warm-up.
# Here: build, stage build/bin/denox with ../shared/tools/device-prep.sh. There (carry
# [".device"]): source .device/env.sh; bash bench/results/2026-11-26-h100-clock-warmup/run.sh
set -uo pipefail
out=${OUT:-/tmp/clock-warmup}
work=/tmp/clock-warmup-work
rm -rf "$work"; mkdir -p "$out" "$work"
export DENOX_CACHE_DIR=$work/cache
size=3840x2160
for arch in small balanced; do
  denox make-model --arch $arch --channels 3 --pad-crop "$work/$arch.onnx" >/dev/null
  sleep 20  # an idle GPU, as after the tune's shader compiles
  denox compile "$work/$arch.onnx" --size $size --tuning measure --quiet > "$out/$arch-compile.txt" 2>&1 || echo "$arch: tune FAILED"
done
denox bench "$work/small.onnx" --size $size --tuning heuristic --runs 300 --warmup 20 >/dev/null 2>&1  # clock up
for arch in small balanced; do
  for t in heuristic measure; do
    denox bench "$work/$arch.onnx" --size $size --tuning $t --runs 30 --warmup 5 --json |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("%-9s %-9s median %.3f min %.3f" % (sys.argv[1], sys.argv[2], j["median_ms"], j["min_ms"]))' $arch $t
  done
done | tee "$out/summary.txt"
