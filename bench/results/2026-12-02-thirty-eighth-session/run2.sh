#!/usr/bin/env bash
# Thirty-eighth session, device call 2 (carry [".device-coop"]; staged with
# `bash bench/conv_layers.sh stage`, sid's layer 1.4.363 in .device-coop/vvl, denox_runtime_tests
# beside the kernel tests), all at once on the one GPU:
#  - the [coop] and [q8] tests under GPU-AV, the [sweep] test cases over SHARDS processes;
#  - the runtime tests under the layer with GPU-AV and, to tell the two apart, without it.
# Logs are packed into $OUT/logs.tar.gz (the device tool returns few files).
set -u
out=${OUT:-/tmp/denox-run2}; mkdir -p "$out"
logs=/tmp/denox-logs; rm -rf "$logs"; mkdir -p "$logs"
for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
runtime_tests() {  # $1: log name, $2: 1 for GPU-AV
  (
    export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    [ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || [ -e /etc/vulkan/icd.d/nvidia_icd.json ] ||
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    source .device-coop/vvl/env.sh || exit 1
    if [ "$2" = 1 ]; then source bench/gpuav.sh || exit 1; fi
    timeout 530 .device-coop/bin/denox_runtime_tests -d yes > "$logs/$1" 2>&1
    echo "runtime tests rc=$?" >> "$logs/$1"
  ) &
}
runtime_tests runtime-syncval.txt 0
runtime_tests runtime-gpuav.txt 1
start=$(date +%s)
OUT=$logs GPUAV=1 SHARDS=${SHARDS:-13} timeout 540 bash bench/conv_layers.sh run --validation > "$logs/conv_layers.txt" 2>&1
echo "conv_layers rc=$? after $(( $(date +%s) - start )) s"
wait
for f in "$logs"/runtime-*.txt; do
  echo "== $(basename "$f")"; grep -m 6 "hazard\|FAILED\|Validation Error" "$f"; tail -3 "$f"
done
for f in "$logs"/coop-gpuav-*.txt; do
  echo "== $(basename "$f"): $(grep -c "Validation Error\|VUID" "$f") layer messages"
  grep -m 5 "Validation Error\|FAILED\|combinations (shard" "$f"; tail -2 "$f"
done
tar czf "$out/logs.tar.gz" -C "$logs" .
