#!/usr/bin/env bash
# One device call: elementwise chains in one dispatch (eltwise) on the H100.
# Here: build, then stage build/bin/denox and build/tests/kernels/denox_kernel_tests with
# ../shared/tools/device-prep.sh. There (carry [".device"]):
#   source .device/env.sh; bash bench/results/2026-11-26-h100-eltwise/run.sh
# Correctness of the path-tracer model against the CPU reference, then that model and the
# 3-channel benchmark model at 1920x1088: tune, bench heuristic and tuned (median of 30 after 5),
# per dispatch (both).
set -uo pipefail
R=$(cd "$(dirname "$0")/../../.." && pwd)
out=${OUT:-/tmp/eltwise}
work=/tmp/eltwise-work
mkdir -p "$out" "$work"
export DENOX_CACHE_DIR=$work/cache
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/info.txt"
# Correctness on this GPU (the portable op tests need the validation layer, which this machine
# lacks): the path-tracer model, both eltwise chains included, against the CPU reference at an
# odd size (element counts not multiples of 4: the scalar path) and a vector-path one.
M=$R/models/oidn_pathtracer_balanced.onnx
for size in 317x203 320x200; do
  denox make-image "$work/in9.npy" --size $size --channels 9 --seed 7 >/dev/null
  denox run "$M" -i "$work/in9.npy" -o "$work/cpu.npy" --backend cpu >/dev/null
  for p in fp32 fp16; do
    denox run "$M" -i "$work/in9.npy" -o "$work/vk.npy" --backend vulkan --precision $p >/dev/null &&
      python3 -c 'import numpy as np,sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); print("%s %s: relative L2 %.2e, NaN %s" % (sys.argv[3], sys.argv[4], np.linalg.norm(a-b)/np.linalg.norm(a), bool(np.isnan(b).any())))' "$work/cpu.npy" "$work/vk.npy" $size $p
  done
done | tee "$out/correctness.txt"
denox make-model --arch balanced --channels 3 --pad-crop "$work/balanced3.onnx" >/dev/null
bash "$R/bench/time_models.sh" "$out" 1920x1088 "$work/balanced3.onnx" "$R/models/oidn_pathtracer_balanced.onnx"
grep -E "Mul|Div|Clip|eltwise|sum" "$out/oidn_pathtracer_balanced-per-dispatch-measure.txt"
