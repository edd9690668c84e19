#!/usr/bin/env bash
# Thirty-ninth session, device call 1 (carry [".device-coop"]; staged with
# `bash bench/conv_layers.sh stage`, sid's layer 1.4.363 in .device-coop/vvl, denox_runtime_tests
# beside the kernel tests), all at once on the one GPU:
#  - the runtime tests under the layer without and with GPU-AV (the input adapters now bind only
#    their channel range where it is aligned, else the whole tensor after a barrier: finding 2);
#  - bench/validate_gpu.sh (heuristic plans of every precision against the CPU reference, the
#    timing paths; the denox CLI in .device-coop/bin) under the layer without GPU-AV: copies
#    (Concat, in the fp32 plans) now bind only the range they write where aligned, as the
#    adapters do (the API tests stayed here: the carry limit);
#  - under GPU-AV, the TAIL_WG_SYNC test case (finding 1: the tail with workgroup barriers must
#    draw no race report) and the X0_Q8 test case over 12 processes (one combination each: it
#    did not fit one call last session).
# Logs are packed into $OUT/logs.tar.gz (the device tool returns few files).
set -u
out=${OUT:-/tmp/denox-run}; mkdir -p "$out"
logs=/tmp/denox-logs; rm -rf "$logs"; mkdir -p "$logs"
for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run_tests() {  # $1: log name, $2: 1 for GPU-AV, $3: binary, rest: its arguments (env set by the caller)
  local log=$1 gpuav=$2 bin=$3; shift 3
  (
    export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || [ -e /etc/vulkan/icd.d/nvidia_icd.json ] ||
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    source .device-coop/vvl/env.sh || exit 1
    if [ "$gpuav" = 1 ]; then source bench/gpuav.sh || exit 1; fi
    start=$(date +%s)
    bin=$PWD/.device-coop/bin/$bin
    timeout 540 "$bin" "$@" > "$logs/$log" 2>&1
    echo "rc=$? after $(( $(date +%s) - start )) s" >> "$logs/$log"
  ) &
}
run_tests runtime-syncval.txt 0 denox_runtime_tests -d yes
run_tests runtime-gpuav.txt 1 denox_runtime_tests -d yes
(
  export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="$PWD/.device-coop/bin:$PATH"
  [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || [ -e /etc/vulkan/icd.d/nvidia_icd.json ] ||
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source .device-coop/vvl/env.sh || exit 1
  OUT=$logs/validate TUNINGS=heuristic timeout 400 bash bench/validate_gpu.sh > "$logs/validate-gpu.txt" 2>&1
  echo "validate_gpu rc=$?" >> "$logs/validate-gpu.txt"
) &
export DENOX_COOP_VALIDATION=1
run_tests tail-wg-sync-gpuav.txt 1 denox_kernel_tests -d yes "a TAIL with workgroup barriers*"
for i in $(seq 0 11); do
  DENOX_TEST_SHARD=$i/12 run_tests x0q8-gpuav-$i.txt 1 denox_kernel_tests -d yes "int8 X0 of up2 convs (X0_Q8) on the GPU*"
done
wait
for f in "$logs"/*.txt; do
  echo "== $(basename "$f"): $(grep -c "Validation Error\|vulkan validation: .*\(hazard\|race\|VUID\)" "$f") layer errors"
  grep -m 4 "hazard\|data race\|FAILED\|combinations (shard\|test cases\|All tests passed" "$f"; tail -n 1 "$f"
done
tar czf "$out/logs.tar.gz" -C "$logs" .
