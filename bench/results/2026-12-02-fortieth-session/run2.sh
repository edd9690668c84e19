#!/usr/bin/env bash
# Fortieth session, device call 2 (carry [".device"]; staged with
#   ../shared/tools/device-prep.sh denox_pathtracer denox models/oidn_pathtracer_balanced.onnx CAL.json
# from a Release build, CAL.json made here with `denox calibrate` on 8 random 9-channel 256x256
# images from `denox make-image --channels 9`):
#   source .device/env.sh; bash bench/results/2026-12-02-fortieth-session/run2.sh $OUT
# The path tracer's engine device (src/vkhost) now enables shaderInt8, as denox lists it: before,
# `--precision int8` was refused on every GPU ("shaderInt8 is not enabled"). The path tracer at
# 1920x1080, fp16 and int8, 20 frames of 4 spp, PSNR against a 64-spp reference.
set -u
out=$1; mkdir -p "$out"
b=.device/bin
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for p in fp16 int8; do
  args=(--precision "$p")
  [ "$p" = int8 ] && args+=(--calibration "$b/pt-cal.json")
  timeout 200 "$b/denox_pathtracer" --model "$b/oidn_pathtracer_balanced.onnx" --scene 0 --spp 4 --size 1920x1080 \
    --frames 20 --reference-spp 64 --out "/tmp/pt-$p" "${args[@]}" > "$out/pathtracer-$p.txt" 2>&1
  echo "$p rc=$?"; grep -E "median|PSNR|error|refused|warning" "$out/pathtracer-$p.txt" | head -8
done
