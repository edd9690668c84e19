#!/usr/bin/env bash
# Twenty-fifth session, device call 3 (carry [".device"]): are the tuner's edge times at
# 1280x720 repeatable? run-same-edge.sh's tuning of OIDN small (int8, 1280x720) timed dec_conv4b
# to dec_conv2b about twice as slow as they ran in the network. bench/measure_noise.sh (two
# tunings on fresh caches, nvidia-smi's SM clock every 50 ms) on that model and size, then at
# 1920x1088 for comparison. Run again (call 4) after the re-time pass (measure.cpp step 4).
# Run: source .device/env.sh; bash bench/results/2026-11-29-twenty-fifth-session/run-noise.sh OUT
set -u
out=${1:-/tmp/out25c}; mkdir -p "$out"
work=/tmp/denox-noise; mkdir -p "$work"
source bench/calibration_images.sh
calibration_images "$work" || exit 1
denox make-model --arch small --channels 3 --pad-crop "$work/small.onnx" >/dev/null || exit 1
denox calibrate "$work/small.onnx" "${calib_args[@]}" -o "$work/calib.json" >/dev/null || exit 1
for size in 1280x720 1920x1088; do
  echo "== OIDN small, int8, $size"
  MODEL=$work/small.onnx CALIBRATION=$work/calib.json SIZE=$size OUT=$out/noise-$size WORK=$work/noise-$size bash bench/measure_noise.sh
done
