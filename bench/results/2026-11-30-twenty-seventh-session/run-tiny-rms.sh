#!/usr/bin/env bash
# Twenty-seventh session, device call 6 (carry [".device"]): OIDN small and balanced int8 at
# degenerate extents on the H200, heuristic and tuned plans: the CPU reference's output RMS, the
# plan's RMS error and relative L2, against 37x37 (is the high relative L2 the output's size?).
# Run: source .device/env.sh; bash bench/results/2026-11-30-twenty-seventh-session/run-tiny-rms.sh OUT
set -u
out=${1:-/tmp/out27r}; mkdir -p "$out"
w=/tmp/denox-tiny-rms; rm -rf "$w"; mkdir -p "$w"
export DENOX_CACHE_DIR=$w/cache
source bench/calibration_images.sh
calibration_images "$w" || exit 1
for arch in small balanced; do
  denox make-model --arch $arch --channels 3 --pad-crop "$w/$arch.onnx" >/dev/null || exit 1
  denox calibrate "$w/$arch.onnx" "${calib_args[@]}" -o "$w/cal-$arch.json" >/dev/null || exit 1
  for size in 1x1 1x37 33x1 37x37; do
    denox make-image "$w/in.pfm" --size $size --seed 23 >/dev/null
    denox run "$w/$arch.onnx" -i "$w/in.pfm" -o "$w/cpu.npy" --backend cpu >/dev/null 2>&1
    for t in heuristic measure; do
      denox run "$w/$arch.onnx" -i "$w/in.pfm" -o "$w/vk.npy" --backend vulkan --precision int8 \
        --calibration "$w/cal-$arch.json" --tuning $t >/dev/null 2>&1 || { echo "$arch $size $t: run FAILED"; continue; }
      python3 -c 'import numpy as np,sys
a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); e=np.abs(a-b).mean(axis=(0,1)).ravel()
print("%s: ref RMS %.4f, int8 RMS error %.4f, relative L2 %.3f, per-pixel mean |error| min %.4f max %.4f" %
      (sys.argv[3], np.sqrt((a**2).mean()), np.sqrt(((a-b)**2).mean()), np.linalg.norm(a-b)/np.linalg.norm(a), e.min(), e.max()))' \
        "$w/cpu.npy" "$w/vk.npy" "$arch $size $t"
    done
  done
done 2>&1 | tee "$out/tiny-rms.txt"
