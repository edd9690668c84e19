#!/usr/bin/env bash
# The main job, from a clean clone on a fresh Debian 12 machine: installs what it needs, builds
# denox, generates an OIDN "balanced" U-Net (dynamic H/W with a PyTorch-style pad-to-16 / crop
# shape subgraph) and a noisy test image at an odd size, and denoises the image with `denox run`.
# Everything it writes lands in out/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -G Ninja
cmake --build build
out=out/demo
mkdir -p "$out"
denox=build/bin/denox
"$denox" make-model "$out/oidn_balanced.onnx" --arch balanced --channels 3 --pad-crop --seed 7
"$denox" make-image "$out/noisy.pfm" --size 317x203 --channels 3 --seed 11
"$denox" inspect "$out/oidn_balanced.onnx" | sed -n '1,6p'
time "$denox" run "$out/oidn_balanced.onnx" --input "$out/noisy.pfm" --output "$out/denoised_cpu.pfm" --backend cpu
echo "demo: wrote $out/denoised_cpu.pfm"
