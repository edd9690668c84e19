#!/usr/bin/env bash
# The int8 precision's quality through the product path on the GPU machine, in one device call
# (~2 minutes): renders tools/train's held-out set (24 scenes, seed 2, 256x256, spp 1,2,4,8,
# 4096-spp references) and a calibration set (16 other scenes, seed 3, spp 1 and 4), then runs
# the hidden test [.][q8-quality] (tests/kernels/q8_quality.cpp): the shipped denoiser's fp16 and
# int8 plans, PSNR per spp.
#
# Here:   bash bench/conv_layers.sh stage                      (denox_kernel_tests -> .device-coop/)
#         cmake --build build --target denox_pathtracer && strip -o /tmp/denox_pathtracer build/bin/denox_pathtracer
#         rm -rf .device && bash ../shared/tools/device-prep.sh /tmp/denox_pathtracer
# There:  source .device/env.sh; bash bench/q8_quality.sh      (device tool, carry [".device", ".device-coop"])
# Knobs: TEST_COUNT (24), CALIB_COUNT (16), DENOX_Q8_CALIB_COUNT (8: inputs calibrated on),
#        SIZE (256x256), OUT, WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-q8-out}
work=${WORK:-/tmp/denox-q8}
mkdir -p "$out" "$work"
rm -rf "$work/test" "$work/calib"
denox_pathtracer --dataset "$work/test" --count "${TEST_COUNT:-24}" --size "${SIZE:-256x256}" --dataset-spp 1,2,4,8 \
  --reference-spp 4096 --seed 2 | tail -1
denox_pathtracer --dataset "$work/calib" --count "${CALIB_COUNT:-16}" --size "${SIZE:-256x256}" --dataset-spp 1,4 \
  --reference-spp 16 --seed 3 | tail -1
export LD_LIBRARY_PATH="$PWD/.device-coop/lib:$LD_LIBRARY_PATH"
DENOX_Q8_DATA="$work/test" DENOX_Q8_CALIB="$work/calib" DENOX_Q8_MODEL=models/oidn_pathtracer_balanced.onnx \
  .device-coop/bin/denox_kernel_tests "[q8-quality]" 2>&1 | tee "$out/q8_quality.txt"
