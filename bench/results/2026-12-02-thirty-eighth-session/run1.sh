#!/usr/bin/env bash
# Thirty-eighth session, device call 1 (carry [".device-coop"]; staged with
# `bash bench/conv_layers.sh stage`, sid's layer in .device-coop/vvl, denox_runtime_tests beside
# the kernel tests): the [coop] and [q8] tests under GPU-AV, the sweeps over SHARDS processes,
# and the runtime tests under GPU-AV in one more process, all at once.
set -u
out=${OUT:-/tmp/denox-run1}; mkdir -p "$out"
for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
nproc; free -g | head -2
(
  export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || [ -e /etc/vulkan/icd.d/nvidia_icd.json ] ||
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
  source .device-coop/vvl/env.sh && GPUAV=1 source bench/gpuav.sh &&
    timeout 540 .device-coop/bin/denox_runtime_tests -d yes > "$out/runtime-gpuav.txt" 2>&1
  echo "runtime tests rc=$?" >> "$out/runtime-gpuav.txt"
) &
start=$(date +%s)
GPUAV=1 SHARDS=${SHARDS:-13} timeout 540 bash bench/conv_layers.sh run --validation
echo "conv_layers rc=$? after $(( $(date +%s) - start )) s"
wait
echo "== runtime"; grep -m 20 -i "error\|FAILED" "$out/runtime-gpuav.txt"; tail -4 "$out/runtime-gpuav.txt"
for f in "$out"/coop-gpuav-*.txt; do
  echo "== $(basename "$f"): $(grep -c "Validation Error\|VUID" "$f") layer messages"
  grep -m 5 "Validation Error\|FAILED\|combinations (shard" "$f"; tail -2 "$f"
done
