#!/usr/bin/env bash
# denox on the GPU machine under the Khronos validation layer 1.4, synchronization validation
# included: the cooperative-matrix and int8 pipelines that CI's lavapipe cannot run (it has no
# cooperative matrices, and Debian 12's layer predates them), the tuner's measurements, and the
# timing paths. Every denox command here fails on a layer error (--validation). Timings taken
# under the layer mean nothing; this checks usage, not speed.
#
# Here:   bash bench/stage.sh --validation   (.device with the layer in .device/vvl,
#                                              scripts/fetch-validation-layer.sh)
# There:  source .device/env.sh; source .device/vvl/env.sh; bash bench/validate_gpu.sh
#         (device tool: carry [".device"]). Logs go to $OUT when set.
# Knobs: ARCHS ("balanced small"), SIZES ("317x203 957x541"), TUNINGS ("heuristic measure"),
# GPUAV=1 adds the layer's GPU-assisted validation: it instruments every shader to report
# out-of-bounds buffer accesses, which the CPU-side checks cannot see. It needs a layer from
# Debian unstable (VVL_SUITE=sid bash bench/stage.sh --validation; bench/gpuav.sh says why), and
# slows every dispatch several-fold: keep the sizes small (e.g. SIZES=317x203 TUNINGS=heuristic).
# The [coop] kernel tests under the layer: bash bench/conv_layers.sh run --validation.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-validate}
work=$(mktemp -d /tmp/denox-validate-XXXXXX) || { echo "validate_gpu: mktemp failed"; exit 1; }
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
failed=0
if [ "${GPUAV:-0}" = 1 ]; then source bench/gpuav.sh || exit 1; fi
step() { echo "## $*"; }

step "denox info --validation"
denox info --validation 2>&1 | tee "$out/info.txt" || { echo "info FAILED"; failed=1; }

# Plans against the CPU reference with the layer on: every precision, heuristic and tuned (a
# tune creates and measures every candidate pipeline, each under the layer).
for tuning in ${TUNINGS:-heuristic measure}; do
  step "plans against the CPU reference under the layer, $tuning"
  RUN_ARGS=--validation ERR_LINES=60 TUNING=$tuning PRECISIONS="fp32 fp16 int8" ARCHS="${ARCHS:-balanced small}" \
    SIZES="${SIZES:-317x203 957x541}" bash bench/check_reference.sh "$out/reference-$tuning.txt" || failed=1
done

# The timing paths under the layer: clock warm-up, timestamps, per-dispatch queries.
export DENOX_CACHE_DIR=$work/cache
denox make-model --arch balanced --channels 3 --pad-crop "$work/balanced.onnx" >/dev/null || failed=1
source bench/calibration_images.sh
calibration_images "$work" && denox calibrate "$work/balanced.onnx" "${calib_args[@]}" -o "$work/calibration.json" >/dev/null || failed=1
for precision in fp16 int8; do
  args=(--precision "$precision")
  [ "$precision" = int8 ] && args+=(--calibration "$work/calibration.json")
  step "denox bench --validation --per-dispatch, balanced 1920x1088 $precision heuristic"
  denox bench "$work/balanced.onnx" --size 1920x1088 "${args[@]}" --tuning heuristic --runs 3 --warmup 1 --warmup-ms 50 \
    --per-dispatch --validation > "$out/bench-$precision.txt" 2>&1 || { echo "FAILED:"; tail -60 "$out/bench-$precision.txt"; failed=1; }
  tail -3 "$out/bench-$precision.txt"
done
echo "validate_gpu: $([ "$failed" = 0 ] && echo "no layer errors, every plan within its bound" || echo FAILED)"
exit "$failed"
