#!/usr/bin/env bash
# The main job, from a clean clone on a fresh Debian 12 machine: installs what it needs, builds
# denox and the example path tracer, renders a scene at 4 samples per pixel on whatever Vulkan
# device exists (Mesa's lavapipe on a GPU-less machine), denoises it through denox in the same
# command buffer with the denoiser trained by this project (models/, see models/README.md), and
# writes noisy, denoised and reference images (PNG, and PFM for HDR) into out/demo/, printing the
# PSNR of noisy and denoised against the reference and the denoiser's GPU time.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -G Ninja
cmake --build build --target denox denox_pathtracer
out=out/demo
mkdir -p "$out"
build/bin/denox info | sed -n '1,7p'
build/bin/denox_pathtracer --model models/oidn_pathtracer_balanced.onnx --scene 0 --seed 1000 --spp 4 --size 256x192 \
  --reference-spp 256 --out "$out"
echo "demo: wrote $out/{noisy,denoised,reference}.{png,pfm}"
