#!/usr/bin/env bash
# The cooperative-matrix convolution benchmark and checks on the GPU machine.
#
# Here:   bash bench/conv_layers.sh stage     (Release build of denox_kernel_tests into
#                                              /tmp/build-coop, stripped, staged into .device-coop/)
# There:  bash bench/conv_layers.sh run [catch2 args]   (device tool, carry [".device-coop"]):
#         the [coop] correctness tests (every configuration against the CPU reference at odd
#         sizes), then the [coop-bench] per-layer table and the end-to-end numbers. Logs go to
#         $OUT when set. DENOX_BENCH_SWEEP=0 skips the configuration sweep, DENOX_BENCH_SIZE=WxH,
#         DENOX_BENCH_LAYERS=0 skips the per-layer table, DENOX_BENCH_PROFILE=1 adds the profile
#         of the fused plan (coop pipelines without MMAs / without global loads),
#         DENOX_BENCH_VARIANTS=FILE compares kernel variants (extra defines, per-conv configs;
#         format in bench/conv_layers.cpp) per dispatch, DENOX_BENCH_PLAN_DIR keeps their plans,
#         DENOX_BENCH_REPEAT=N measures each end-to-end plan N more times, DENOX_BENCH_BRACKET=1
#         times end to end with only a first and a last timestamp (as `denox bench`; the
#         per-command ones order the commands on NVIDIA's driver). Every measurement
#         first keeps the GPU busy for 0.3 s (the clock drops while pipelines compile).
#         `run --validation [catch2 args]` runs only the [coop] and [q8] tests (or the args'), under the Khronos
#         validation layer 1.4 that `stage --validation` fetches (scripts/fetch-validation-layer.sh;
#         the kernel tests' main fails on its errors), and no benchmark. GPUAV=1 adds the layer's
#         GPU-assisted validation (instrumented shaders: out-of-bounds buffer accesses; stage
#         with VVL_SUITE=sid, bench/gpuav.sh says why). Under it, [coop] and [q8] take over an
#         hour in one process, most of it the host instrumenting and compiling shaders: SHARDS=n
#         (without catch2 args) runs the [sweep] test cases in n processes, each with
#         DENOX_TEST_SHARD=i/n (every n-th combination, coop_support.hpp), and the other [coop] and
#         [q8] test cases in one more process, all at once on the one GPU. Each process's log is
#         coop-gpuav-*.txt (or coop-validation-*.txt) in $OUT; the run fails if any process does.
set -uo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  stage)
    set -e
    shift
    build=${DENOX_BUILD_DIR:-/tmp/build-coop}
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    ninja -C "$build" -j2 denox_kernel_tests
    rm -rf .device-coop && mkdir -p .device-coop/bin .device-coop/lib .device-coop/debs
    cp "$build/tests/kernels/denox_kernel_tests" .device-coop/bin/ && strip .device-coop/bin/denox_kernel_tests
    for lib in $(ldd "$build/tests/kernels/denox_kernel_tests" | awk '$3 ~ /^\// {print $3}'); do
      case $(basename "$lib") in libc.so*|libm.so*|ld-linux*|libvulkan*) ;; *) cp -L "$lib" .device-coop/lib/ ;; esac
    done
    [ -d .device/debs ] || bash ../shared/tools/device-prep.sh  # fetches the Vulkan loader packages
    cp .device/debs/*.deb .device-coop/debs/
    [ "${1:-}" != --validation ] || bash scripts/fetch-validation-layer.sh .device-coop/vvl
    du -sh .device-coop
    ;;
  run)
    shift
    for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
    export LD_LIBRARY_PATH="$PWD/.device-coop/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if [ ! -e /usr/share/vulkan/icd.d/nvidia_icd.json ] && [ ! -e /etc/vulkan/icd.d/nvidia_icd.json ]; then
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    fi
    out=${OUT:-/tmp/denox-coop}; mkdir -p "$out"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    if [ "${1:-}" = --validation ]; then
      shift
      [ -f .device-coop/vvl/env.sh ] || { echo "no layer staged: bash bench/conv_layers.sh stage --validation" >&2; exit 1; }
      source .device-coop/vvl/env.sh || exit 1
      log=$out/coop-validation
      if [ "${GPUAV:-0}" = 1 ]; then source bench/gpuav.sh || exit 1; log=$out/coop-gpuav; fi
      export DENOX_COOP_VALIDATION=1
      shards=${SHARDS:-1}
      if [ "$shards" -gt 1 ] && [ $# -eq 0 ]; then
        # One process per slice of the sweeps and one for the rest, in parallel.
        pids=() logs=()
        for ((i = 0; i < shards; ++i)); do
          logs+=("$log-sweep-$i.txt")
          DENOX_TEST_SHARD=$i/$shards .device-coop/bin/denox_kernel_tests "[sweep]" > "${logs[-1]}" 2>&1 &
          pids+=($!)
        done
        logs+=("$log-rest.txt")
        .device-coop/bin/denox_kernel_tests "[coop]~[sweep],[q8]~[sweep]" > "${logs[-1]}" 2>&1 &
        pids+=($!)
        rc=0
        for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
      else
        [ "$shards" -le 1 ] || echo "SHARDS=$shards ignored: catch2 args were given (they run in one process)" >&2
        [ $# -gt 0 ] || set -- "[coop],[q8]"
        .device-coop/bin/denox_kernel_tests "$@" > "$log.txt" 2>&1
        rc=$?
        logs=("$log.txt")
      fi
      for f in "${logs[@]}"; do
        echo "== $(basename "$f")"
        grep -m 40 -i "validation\|error\|FAILED\|combinations (shard" "$f"; tail -3 "$f"
      done
      exit "$rc"
    fi
    .device-coop/bin/denox_kernel_tests "[coop]" "$@" 2>&1 | tee "$out/coop-tests.txt" | tail -40
    .device-coop/bin/denox_kernel_tests "[coop-bench]" "$@" 2>&1 | tee "$out/coop-bench.txt"
    ;;
  *) echo "usage: $0 stage | run [catch2 args]" >&2; exit 2 ;;
esac
