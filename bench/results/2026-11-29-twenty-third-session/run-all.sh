#!/usr/bin/env bash
# Twenty-third session, device call 3: every network and size in fp16 (bench/run_gpu.sh, denox
# only), the shipped 9-channel model's heuristic plan, and the path tracer's denoise pass with
# the library before (.device/lib-a: 04a22a0) and after, twice each, alternating.
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-third-session/run-all.sh OUT
set -u
out=${1:-/tmp/out23}; mkdir -p "$out"
DENOX_SKIP_TORCH=1 PRECISIONS=fp16 bash bench/run_gpu.sh "$out/fp16-all" > "$out/fp16-all.txt" 2>&1
work=/tmp/denox-shipped; rm -rf $work; mkdir -p $work
for build in a b a b; do
  lib=.device/lib; [ $build = a ] && lib=.device/lib-a
  LD_LIBRARY_PATH="$PWD/$lib:$LD_LIBRARY_PATH" DENOX_CACHE_DIR=$work/cache-$build denox bench models/oidn_pathtracer_balanced.onnx \
    --size 1920x1080 --precision fp16 --tuning heuristic --runs 30 --warmup 5 --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print("shipped 9-ch model fp16 heuristic 1920x1080, build %s: median %.4f ms" % (sys.argv[1], j["median_ms"]))' $build
  echo "path tracer, build $build:"
  LD_LIBRARY_PATH="$PWD/$lib:$LD_LIBRARY_PATH" DENOX_CACHE_DIR=$work/cache-$build denox_pathtracer --model models/oidn_pathtracer_balanced.onnx \
    --scene 3 --seed 1003 --spp 1 --size 1920x1080 --frames 20 --reference-spp 256 --out "$work/hd-$build" 2>&1 | grep -E "median|PSNR"
done | tee "$out/shipped.txt"
