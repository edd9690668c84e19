#!/usr/bin/env bash
# Plans against the CPU reference on the GPU machine: random images at odd sizes through
# `denox run`, relative L2 and NaN per network, size, precision and tuning.
# There:  source .device/env.sh; bash bench/check_reference.sh [OUT_FILE]   (device tool: carry [".device"])
# Knobs: ARCHS ("balanced small"), SIZES ("317x203 957x541"), PRECISIONS (fp16), TUNING
# (heuristic; measure tunes each network and size first), SEED (23).
set -u
cd "$(dirname "$0")/.."
out=${1:-/dev/null}
work=/tmp/denox-reference-work; rm -rf "$work"; mkdir -p "$work"
export DENOX_CACHE_DIR=$work/cache
tuning=${TUNING:-heuristic}
for arch in ${ARCHS:-balanced small}; do
  denox make-model --arch "$arch" --channels 3 --pad-crop "$work/$arch.onnx" >/dev/null || { echo "make-model $arch failed"; continue; }
  for size in ${SIZES:-317x203 957x541}; do
    denox make-image "$work/in.pfm" --size "$size" --seed "${SEED:-23}" >/dev/null
    denox run "$work/$arch.onnx" -i "$work/in.pfm" -o "$work/cpu.npy" --backend cpu >/dev/null || { echo "$arch $size: cpu run failed"; continue; }
    for precision in ${PRECISIONS:-fp16}; do
      tag="$arch $size $tuning $precision"
      if ! denox run "$work/$arch.onnx" -i "$work/in.pfm" -o "$work/vk.npy" --backend vulkan --precision "$precision" --tuning "$tuning" \
        >/dev/null 2>"$work/err.txt"; then
        echo "$tag: vulkan run FAILED"; tail -5 "$work/err.txt"; continue
      fi
      python3 -c 'import numpy as np,sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); print("%s: relative L2 %.2e NaN %s" % (sys.argv[3], np.linalg.norm(a-b)/np.linalg.norm(a), bool(np.isnan(b).any())))' \
        "$work/cpu.npy" "$work/vk.npy" "$tag"
    done
  done
done | tee "$out"
