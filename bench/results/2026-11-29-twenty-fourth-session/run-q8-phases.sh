#!/usr/bin/env bash
# Twenty-fourth session, device call 2 (carry [".device-coop"], staged by `bash bench/conv_layers.sh
# stage`): the int8 PHASES convs with OIDN balanced's channel counts (three or four X0 chunks, two
# X1 chunks), which the emulation on lavapipe runs wrong and nondeterministically.
#  1. the session's temporary [tmp2] case (the emulated shader on these shapes, three runs), since
#     removed: it did not run there (the kernel tests' device() asks for the validation layer,
#     which the GPU machine lacks); run-check-measure.sh ran the emulated plan through the CLI;
#  2. [q8]: the real int8 kernels, now with those shapes and a same-bits check;
#  3. the per-layer table of bench/conv_layers.cpp with the heuristic column as the plans have it.
# Run: bash bench/results/2026-11-29-twenty-fourth-session/run-q8-phases.sh OUT
set -u
out=${1:-/tmp/out24}; mkdir -p "$out"
for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ ! -e /etc/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t=.device-coop/bin/denox_kernel_tests
timeout 120 $t "[tmp2]" > "$out/tmp2-emulated-on-h200.txt" 2>&1; grep -E "deterministic|device|passed|failed" "$out/tmp2-emulated-on-h200.txt"
timeout 300 $t "[q8]" > "$out/q8-tests.txt" 2>&1; tail -4 "$out/q8-tests.txt"
DENOX_BENCH_SWEEP=0 DENOX_BENCH_LAYERS=1 timeout 150 $t "[coop-bench]" > "$out/coop-bench.txt" 2>&1; sed -n '/## per layer/,/## end to end/p' "$out/coop-bench.txt" | head -40
