#!/usr/bin/env bash
# One device call's worth of measurements on the GPU machine: denox (Vulkan timestamps) and
# PyTorch (CUDA events) on the same networks and sizes, printed as tables.
#
# Here:   bash bench/stage.sh            (Release build, stripped, staged into .device/)
# There:  source .device/env.sh; bash bench/run_gpu.sh [--compile]   (device tool: carry
#         [".device"]); DENOX_SKIP_TORCH=1 skips the PyTorch part.
# Knobs (to split the run over calls): ARCHS ("balanced small"), SIZES ("1280x720 1920x1088
# 3840x2160"), PRECISIONS ("fp16 int8"; int8 is calibrated per network on 8 random 256x256
# images, bench/calibration_images.sh). The last table puts denox and PyTorch side by side
# (bench/side_by_side.py).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-bench}   # results (the device tool brings $OUT back)
work=/tmp/denox-bench-work      # models and cache
mkdir -p "$out" "$work/models"
denox info | tee "$out/info.txt"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$out/info.txt"
for arch in balanced small; do
  denox make-model --arch "$arch" --channels 3 --pad-crop "$work/models/oidn-$arch.onnx" >/dev/null
done
export DENOX_CACHE_DIR="$work/cache"
# Plans against the CPU reference first (bench/check_reference.sh): balanced at odd extents and
# at 320x200, a width that is a multiple of 4 (the io adapters' 4-pixel path), fp32 and fp16.
echo "## correctness on this GPU: balanced vs the CPU reference (bench/check_reference.sh)"
ARCHS=balanced SIZES="317x203 320x200" PRECISIONS="fp32 fp16" TUNING=heuristic SEED=23 MAX_L2=2e-2 bash bench/check_reference.sh "$out/correctness.txt" ||
  echo "correctness FAILED (above)"
archs=${ARCHS:-balanced small}
sizes=${SIZES:-1280x720 1920x1088 3840x2160}
precisions=${PRECISIONS:-fp16 int8}
rm -f "$out/denox.jsonl"
# int8 plans need a calibration of the model (`denox calibrate`): 8 random images of 256x256.
source bench/calibration_images.sh
# prec_args for PRECISION on network ARCH: int8 plans read that network's calibration.
set_prec_args() {
  prec_args=(--precision "$1")
  if [ "$1" = int8 ]; then prec_args+=(--calibration "$work/calibration-$2.json"); fi
}
calib_args=()
if [[ " $precisions " == *" int8 "* ]]; then calibration_images "$work"; fi
echo "## denox (fp16: cooperative-matrix convolutions where the device has them; int8: the opt-in int8 precision, calibrated), Vulkan timestamps, median of 30 after 500 ms of clock warm-up (denox bench --warmup-ms) and 5 warm-up runs"
echo "## tuning: heuristic (cost model, nothing measured) and measure (tuned on this GPU at that size, pruned configs)"
printf '%-10s %10s %-9s %-10s %10s %10s %10s %12s\n' arch size precision tuning median_ms min_ms max_ms record_us
for arch in $archs; do
  if [[ " $precisions " == *" int8 "* ]]; then
    denox calibrate "$work/models/oidn-$arch.onnx" "${calib_args[@]}" -o "$work/calibration-$arch.json" >/dev/null ||
      echo "$arch: calibration FAILED"
  fi
  for size in $sizes; do
    for precision in $precisions; do
      set_prec_args "$precision" "$arch"
      # Tune in a process of its own, so the timed process loads the plan from the cache: timed
      # right after the in-process tune, the GPU's clock can still be down (bench/RESULTS.md,
      # 2026-11-25 morning: small 3840x2160 read 5.52 ms that way, 5.10 from the cache).
      denox compile "$work/models/oidn-$arch.onnx" --size "$size" "${prec_args[@]}" --tuning measure --quiet >/dev/null 2>&1 ||
        echo "$arch $size $precision: tuning FAILED"
      sleep 5
      for tuning in heuristic measure; do
        json=$(denox bench "$work/models/oidn-$arch.onnx" --size "$size" "${prec_args[@]}" --tuning "$tuning" --runs 30 --warmup 5 --json) ||
          { echo "$arch $size $precision $tuning FAILED"; continue; }
        # One parse: the row of the table, and the JSON line with the arch it lacks.
        python3 -c 'import json,sys; j=json.loads(sys.argv[1]); j["arch"]=sys.argv[2]
print("%-10s %10s %-9s %-10s %10.3f %10.3f %10.3f %12.1f" % (sys.argv[2], sys.argv[3], j["precision"], j["tuning"], j["median_ms"], j["min_ms"], j["max_ms"], j["record_host_us"]))
open(sys.argv[4], "a").write(json.dumps(j) + "\n")' "$json" "$arch" "$size" "$out/denox.jsonl"
      done
    done
  done
done
# The headline network and size (balanced, 1920x1088): per-dispatch tables and the portable
# shaders' time, where this run has them.
if [[ " $archs " == *" balanced "* && " $sizes " == *" 1920x1088 "* ]]; then
  for precision in $precisions; do
    set_prec_args "$precision" balanced
    echo "## denox per dispatch, balanced 1920x1088 (serialized), $precision, tuned"
    denox bench "$work/models/oidn-balanced.onnx" --size 1920x1088 "${prec_args[@]}" --tuning measure --runs 20 --warmup 3 --per-dispatch | tail -n +2
  done
  echo "## denox portable shaders for comparison (fp32 plan: no cooperative matrices), balanced 1920x1088"
  denox bench "$work/models/oidn-balanced.onnx" --size 1920x1088 --precision fp32 --runs 20 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print("portable fp32: median %.3f ms" % j["median_ms"])'
  # (The heuristic plan of the run's first precision: the loop above compiled it into this cache.)
  read -r first _ <<< "$precisions"
  set_prec_args "$first" balanced
  echo "## second process, same cache: compiles nothing ($first, heuristic)"
  denox bench "$work/models/oidn-balanced.onnx" --size 1920x1088 "${prec_args[@]}" --tuning heuristic --runs 20 --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print({k: j[k] for k in ("load_ms","plans_compiled","shaders_compiled","plan_cache_hits")})'
fi
if command -v denox_pathtracer >/dev/null && [ -f models/oidn_pathtracer_balanced.onnx ]; then
  echo "## path tracer with the shipped denoiser, 1920x1080, 1 spp, 20 frames"
  denox_pathtracer --model models/oidn_pathtracer_balanced.onnx --scene 3 --seed 1003 --spp 1 --size 1920x1080 --frames 20 \
    --reference-spp 256 --out "$work/hd" 2>&1 | grep -E "median|PSNR"
fi
if [ "${DENOX_SKIP_TORCH:-0}" = 1 ]; then  # denox only (PyTorch's numbers are in RESULTS.md)
  python3 bench/side_by_side.py "$out/denox.jsonl"
  exit 0
fi
echo "## PyTorch"
torch_args=()
for arch in $archs; do torch_args+=(--arch "$arch"); done
for size in $sizes; do torch_args+=(--size "$size"); done
python3 bench/torch_oidn.py "${torch_args[@]}" --json "$@" | tee "$out/torch.jsonl"
python3 bench/side_by_side.py "$out/denox.jsonl" "$out/torch.jsonl"
