#!/usr/bin/env bash
# The GPU run of tools/train, in one device call (about 8 minutes with the defaults):
#   1. render a training set and a held-out set (other seed: other scenes) with denox_pathtracer
#      on the GPU,
#   2. train the OIDN U-Net (train.py) for $MINUTES, evaluate on the held-out set, export ONNX,
#   3. check that denox runs the export as PyTorch does (CPU reference, Vulkan fp32 and fp16),
#   4. render and denoise held-out scenes through denox (PSNR noisy vs denoised vs reference),
#   5. time render and denoise at 1920x1080 (timestamp queries), keep those images.
#
# Here:   bash tools/train/stage.sh
# There:  source .device/env.sh; bash tools/train/run_gpu.sh        (device tool: carry [".device"])
# What comes back ($OUT, 8 files at most): log.txt, oidn_pt.onnx/.pt/.json, the 1080p
# noisy/denoised/reference PNGs.
# Knobs (environment): MINUTES=4 TRAIN_COUNT=256 TEST_COUNT=24 SIZE=256x256 ARCH=balanced
#                      REF_SPP=1024 TEST_REF_SPP=4096 BATCH=16 CROP=128
#                      HELDOUT_SIZE=512x512 HELDOUT_REF_SPP=4096 HD_SIZE=1920x1080 HD_FRAMES=30 HD_REF_SPP=1024
# (tiny values make a dry run on lavapipe: see README.md)
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/denox-train-out}
work=${WORK:-/tmp/denox-train}
MINUTES=${MINUTES:-4} TRAIN_COUNT=${TRAIN_COUNT:-256} TEST_COUNT=${TEST_COUNT:-24} SIZE=${SIZE:-256x256}
ARCH=${ARCH:-balanced} REF_SPP=${REF_SPP:-1024} TEST_REF_SPP=${TEST_REF_SPP:-4096} BATCH=${BATCH:-16} CROP=${CROP:-128}
HELDOUT_SIZE=${HELDOUT_SIZE:-512x512} HELDOUT_REF_SPP=${HELDOUT_REF_SPP:-4096}
HD_SIZE=${HD_SIZE:-1920x1080} HD_FRAMES=${HD_FRAMES:-30} HD_REF_SPP=${HD_REF_SPP:-1024}
mkdir -p "$out" "$work"
exec > >(tee "$out/log.txt") 2>&1
export DENOX_CACHE_DIR="$work/cache" PYTHONUNBUFFERED=1
model="$out/oidn_pt.onnx"
step() { echo; echo "## $* ($(date +%T))"; }
fail=0

step "machine"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
denox info | head -4

step "data: $TRAIN_COUNT training scenes, $TEST_COUNT held-out, $SIZE, spp 1,2,4,8"
rm -rf "$work/train" "$work/test"
time denox_pathtracer --dataset "$work/train" --count "$TRAIN_COUNT" --size "$SIZE" --dataset-spp 1,2,4,8 \
  --reference-spp "$REF_SPP" --seed 1 | tail -1 || exit 1
time denox_pathtracer --dataset "$work/test" --count "$TEST_COUNT" --size "$SIZE" --dataset-spp 1,2,4,8 \
  --reference-spp "$TEST_REF_SPP" --seed 2 | tail -1 || exit 1

step "train ($MINUTES min, $ARCH)"
python3 tools/train/train.py --data "$work/train" --test "$work/test" --minutes "$MINUTES" --arch "$ARCH" \
  --batch "$BATCH" --crop "$CROP" --out "$model" || exit 1

step "denox runs the export as PyTorch does (a held-out input, 77x61)"
python3 tools/train/check_export.py --model "${model%.onnx}.pt" --onnx "$model" --input "$work/test/00000_spp4.npy" \
  --size 77x61 || fail=1

step "held-out scenes through denox_pathtracer ($HELDOUT_SIZE, 4 spp, reference $HELDOUT_REF_SPP spp)"
for scene in 0 1 2 3; do
  denox_pathtracer --model "$model" --scene $scene --seed $((1000 + scene)) --spp 4 --size "$HELDOUT_SIZE" \
    --reference-spp "$HELDOUT_REF_SPP" --out "$work/heldout$scene" | grep -E "^scene|PSNR" || fail=1
done

step "$HD_SIZE: 1 spp, $HD_FRAMES frames, render and denoise timed with timestamp queries"
denox_pathtracer --model "$model" --scene 3 --seed 1003 --spp 1 --size "$HD_SIZE" --frames "$HD_FRAMES" \
  --reference-spp "$HD_REF_SPP" --out "$work/hd" || fail=1
cp "$work/hd/noisy.png" "$out/hd_noisy.png"; cp "$work/hd/denoised.png" "$out/hd_denoised.png"
cp "$work/hd/reference.png" "$out/hd_reference.png"
step "done (status $fail)"
exit $fail
