#!/usr/bin/env bash
# Twenty-fourth session, device call 3 (carry [".device"]): 
#  1. the emulated int8 plan of OIDN balanced (DENOX_TEST_COOP_EMULATE=1: plain arithmetic in the
#     shaders, the configurations the lavapipe tests get) on the H200, three runs: same bits? error?
#  2. tuned plans (fp16 and int8, both networks, tuned at 1920x1088) against the CPU reference at
#     odd sizes (bench/check_reference.sh).
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fourth-session/run-check-measure.sh OUT
set -u
out=${1:-/tmp/out24}; mkdir -p "$out"
w=$(mktemp -d /tmp/denox-emu-XXXXXX)
export DENOX_CACHE_DIR=$w/cache
source bench/calibration_images.sh
calibration_images "$w"
denox make-model --arch balanced --channels 3 --pad-crop "$w/b.onnx" >/dev/null
denox calibrate "$w/b.onnx" "${calib_args[@]}" -o "$w/cal.json" >/dev/null
denox make-image "$w/in.pfm" --size 64x48 --seed 31 >/dev/null
denox run "$w/b.onnx" -i "$w/in.pfm" -o "$w/cpu.npy" --backend cpu >/dev/null
for r in 1 2 3; do
  DENOX_TEST_COOP_EMULATE=1 denox run "$w/b.onnx" -i "$w/in.pfm" -o "$w/emu-$r.npy" --backend vulkan --precision int8 --calibration "$w/cal.json" --no-cache 2>&1 | tail -1
  denox run "$w/b.onnx" -i "$w/in.pfm" -o "$w/gpu-$r.npy" --backend vulkan --precision int8 --calibration "$w/cal.json" >/dev/null 2>&1
done
python3 -c 'import numpy as np,sys
w=sys.argv[1]; c=np.load(w+"/cpu.npy")
for k in ("emu","gpu"):
  a=[np.load("%s/%s-%d.npy"%(w,k,r)) for r in (1,2,3)]
  print(k, "same bits:", all(np.array_equal(a[0],b) for b in a[1:]), "rel L2:", ["%.3g"%(np.linalg.norm(x-c)/np.linalg.norm(c)) for x in a])' "$w" | tee "$out/emulated-int8-on-h200.txt"
rm -rf "$w"
TUNING=measure PRECISIONS="fp16 int8" bash bench/check_reference.sh "$out/correctness-measure.txt" >/dev/null 2>&1 || echo "check_reference measure FAILED"
cat "$out/correctness-measure.txt"
