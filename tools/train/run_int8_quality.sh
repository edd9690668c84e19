#!/usr/bin/env bash
# The GPU run of int8_quality.py, in one device call (~2 minutes): renders the held-out set of
# tools/train (24 scenes, seed 2, 256x256, spp 1,2,4,8, 4096-spp references, as in run_gpu.sh)
# and a calibration set of other scenes (16, seed 3), then prints PSNR of the shipped denoiser
# in fp32, fp16 and simulated int8 variants.
#
# Here:   cmake --build build --target denox_pathtracer   (a Release build)
#         strip -o /tmp/denox_pathtracer build/bin/denox_pathtracer; ../shared/tools/device-prep.sh /tmp/denox_pathtracer
#         python3 tools/train/int8_quality.py --weights models/oidn_pathtracer_balanced.onnx --save-npz .device/weights.npz
# There:  source .device/env.sh; bash tools/train/run_int8_quality.sh   (device tool, carry [".device"])
# Knobs: WEIGHTS (.device/weights.npz), TEST_COUNT (24), CALIB_COUNT (16), SIZE (256x256),
#        TEST_REF_SPP (4096), OUT, WORK.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/denox-int8-out}
work=${WORK:-/tmp/denox-int8}
WEIGHTS=${WEIGHTS:-.device/weights.npz} TEST_COUNT=${TEST_COUNT:-24} CALIB_COUNT=${CALIB_COUNT:-16}
SIZE=${SIZE:-256x256} TEST_REF_SPP=${TEST_REF_SPP:-4096}
mkdir -p "$out" "$work"
rm -rf "$work/test" "$work/calib"
denox_pathtracer --dataset "$work/test" --count "$TEST_COUNT" --size "$SIZE" --dataset-spp 1,2,4,8 \
  --reference-spp "$TEST_REF_SPP" --seed 2 | tail -1
denox_pathtracer --dataset "$work/calib" --count "$CALIB_COUNT" --size "$SIZE" --dataset-spp 1,4 \
  --reference-spp 16 --seed 3 | tail -1
PYTHONUNBUFFERED=1 python3 tools/train/int8_quality.py --weights "$WEIGHTS" --data "$work/test" --calib "$work/calib" \
  | tee "$out/int8_quality.txt"
