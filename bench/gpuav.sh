# Sourced by bench/validate_gpu.sh and bench/conv_layers.sh for GPUAV=1, after the staged
# layer's env.sh: turns on the layer's GPU-assisted validation (every shader instrumented; an
# out-of-bounds access to a storage buffer is an error), and refuses a layer whose GPU-AV
# misreports pushed descriptors. Layers before mid-2026 check a dispatch's accesses against the
# ranges pushed for another dispatch (Vulkan-ValidationLayers issues 11433 and 11738): under
# 1.4.309 every denox plan got false "access out of bounds" errors whose "bytes were bound" were
# the sizes of a neighbouring dispatch's tensors. 1.4.363 (Debian unstable) is the oldest checked.
denox_gpuav_verified=1.4.363
if [ -z "${DENOX_VVL_VERSION:-}" ] ||
   [ "$(printf '%s\n' "$DENOX_VVL_VERSION" "$denox_gpuav_verified" | sort -V | head -1)" != "$denox_gpuav_verified" ]; then
  echo "GPUAV=1: the staged layer is ${DENOX_VVL_VERSION:-of unknown version}; GPU-AV before $denox_gpuav_verified misreports" \
       "pushed descriptors, which every denox dispatch uses. Stage sid's layer: VVL_SUITE=sid bash bench/stage.sh --validation" \
       "(or bench/conv_layers.sh stage --validation)" >&2
  return 1
fi
export VK_KHRONOS_VALIDATION_GPUAV_ENABLE=1
