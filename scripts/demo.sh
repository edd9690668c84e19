#!/usr/bin/env bash
# The main job, from a clean clone on a fresh Debian 12 machine: installs what it needs, builds
# denox, generates an OIDN "balanced" U-Net (dynamic H/W with a PyTorch-style pad-to-16 / crop
# shape subgraph) and a noisy test image at an odd size, and denoises the image with `denox run`
# twice: on the CPU reference and on whatever Vulkan device exists (lavapipe on a GPU-less
# machine), through the public C API, then prints how far apart the two are.
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
cache="$out/cache.sqlite3"
"$denox" info | sed -n '1,7p'
time "$denox" run "$out/oidn_balanced.onnx" --input "$out/noisy.pfm" --output "$out/denoised_vulkan.pfm" --backend vulkan \
  --cache "$cache"
/usr/bin/python3 - "$out/denoised_cpu.pfm" "$out/denoised_vulkan.pfm" <<'PY'
import sys
import numpy as np
def read_pfm(path):
    with open(path, "rb") as f:
        kind = f.readline().strip(); w, h = map(int, f.readline().split()); scale = float(f.readline())
        data = np.frombuffer(f.read(), dtype="<f4" if scale < 0 else ">f4")
    return data.reshape(h, w, 3 if kind == b"PF" else 1)
a, b = read_pfm(sys.argv[1]), read_pfm(sys.argv[2])
print("demo: vulkan vs cpu relative L2 = %.2e" % (np.linalg.norm(a - b) / np.linalg.norm(a)))
PY
echo "demo: wrote $out/denoised_cpu.pfm and $out/denoised_vulkan.pfm"
