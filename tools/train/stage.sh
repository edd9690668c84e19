#!/usr/bin/env bash
# Here (the build machine): builds denox (CLI + libdenox.so) and denox_pathtracer in Release and
# stages them, with the libraries they load and the Vulkan loader, into .device/ (git-ignored)
# through ../shared/tools/device-prep.sh. Then, with the device tool (carry [".device"]):
#   source .device/env.sh; bash tools/train/run_gpu.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/setup-deps.sh
build=${BUILD_DIR:-build-release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDENOX_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target denox denox_pathtracer -- -j"${JOBS:-2}"
strip "$build/bin/denox" "$build/bin/denox_pathtracer" "$build"/lib/libdenox.so.*.*.*
bash ../shared/tools/device-prep.sh "$build/bin/denox" "$build/bin/denox_pathtracer"
