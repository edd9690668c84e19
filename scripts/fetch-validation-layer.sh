#!/usr/bin/env bash
# Fetches the Khronos validation layer 1.4 (Debian 13 "trixie" binary package) for the GPU machine
# and stages it into DIR (default .device/vvl), with DIR/env.sh to source there after the usual
# env.sh. Debian 12's layer (1.3.239) predates VK_KHR_cooperative_matrix, so without this the
# cooperative-matrix pipelines never run under a layer; CI's lavapipe has no cooperative matrices.
#
#   bash scripts/fetch-validation-layer.sh [DIR]
#   (there)  source .device/env.sh; source .device/vvl/env.sh; denox bench --validation ...
#
# The packages are carried as .debs (~7 MB; the layer's library is 28 MB) and unpacked there. It needs
# glibc 2.38 and libstdc++ 14 (GLIBCXX_3.4.32): env.sh unpacks trixie's libstdc++ beside the layer
# when the machine's is older, and refuses, naming the cause, when its glibc is older.
# Why not built from source here: the package archive this machine reaches does not carry the
# layer's source tarball.
#
# VVL_SUITE=sid takes the layer and its loader from Debian unstable instead (whatever version it
# carries: unpinned, named in the log), still with trixie's libstdc++ (sid's needs a newer glibc).
# Use it for GPU-assisted validation: 1.4.309's GPU-AV checks a dispatch's pushed descriptors
# against the ranges of another dispatch's (Vulkan-ValidationLayers issues 11433 and 11738,
# fixed in 2026), so every denox dispatch, all of whose bindings are pushed, gets false
# "access out of bounds" reports there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/.device/vvl}
bash "$root/scripts/setup-deps.sh" >/dev/null   # the private Debian 13 apt lists
deps="$root/.deps"
apt_opts=(-o "Dir::Etc::SourceList=$deps/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$deps/apt/lists" -o "APT::Sandbox::User=root")
# The layer and loader of the Vulkan SDK release whose headers denox builds with (setup-deps'
# libvulkan-dev). The loader: Debian 12's (1.3.239, what device-prep stages) does not know the
# newer instance-level commands that volk asks for, treats them as device commands and asks the
# layer for them per device, which the 1.4 layer reports as a warning on every device creation.
packages=(vulkan-validationlayers=1.4.309.0-1 libvulkan1=1.4.309.0-1 libstdc++6 libgcc-s1)
apt-get "${apt_opts[@]}" update -qq
rm -rf "$dir" && mkdir -p "$dir"
suite=${VVL_SUITE:-trixie}
if [ "$suite" != trixie ]; then
  # The layer and loader from another suite, through its own private lists.
  mkdir -p "$deps/apt-$suite/lists/partial"
  echo "deb http://deb.debian.org/debian $suite main" > "$deps/apt-$suite/sources.list"
  suite_opts=(-o "Dir::Etc::SourceList=$deps/apt-$suite/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
              -o "Dir::State::Lists=$deps/apt-$suite/lists" -o "APT::Sandbox::User=root")
  apt-get "${suite_opts[@]}" update -qq
  (cd "$dir" && apt-get "${suite_opts[@]}" download -qq vulkan-validationlayers libvulkan1)
  echo "fetch-validation-layer: from $suite: $(cd "$dir" && ls vulkan-validationlayers_*.deb libvulkan1_*.deb | tr '\n' ' ')"
  packages=(libstdc++6 libgcc-s1)
fi
for spec in "${packages[@]}"; do
  if ! (cd "$dir" && apt-get "${apt_opts[@]}" download -qq "$spec" 2>/dev/null); then
    echo "fetch-validation-layer: WARNING: $spec is gone from the archive; taking its current version" >&2
    (cd "$dir" && apt-get "${apt_opts[@]}" download -qq "${spec%%=*}")
  fi
done
cat > "$dir/env.sh" <<'EOS'
# Sourced on the GPU machine after .device/env.sh: unpacks the validation layer and the loader of
# its release, and points that loader at the layer (VK_ADD_LAYER_PATH keeps any layer the machine
# has). Each sourcing unpacks into a directory of its own: a shared one, emptied and refilled
# by a second shell, pulled the layer out from under processes of the first (bus errors).
vvl_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vvl_root=$(mktemp -d /tmp/denox-vvl.XXXXXX) || return 1 2>/dev/null || exit 1
mkdir -p "$vvl_root/layers" "$vvl_root/runtime"
dpkg -x "$vvl_dir"/vulkan-validationlayers_*.deb "$vvl_root/pkg"
vvl_so=$(find "$vvl_root/pkg" -name libVkLayer_khronos_validation.so | head -1)
sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$vvl_so\"|" \
  "$vvl_root"/pkg/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json > "$vvl_root/layers/VkLayer_khronos_validation.json"
export VK_ADD_LAYER_PATH="$vvl_root/layers${VK_ADD_LAYER_PATH:+:$VK_ADD_LAYER_PATH}"
dpkg -x "$vvl_dir"/libvulkan1_*.deb "$vvl_root/loader"
export LD_LIBRARY_PATH="$(dirname "$(find "$vvl_root/loader" -name 'libvulkan.so.1' | head -1)"):$LD_LIBRARY_PATH"
if ldd "$vvl_so" 2>&1 | grep -q "GLIBCXX_3.4.3[2-9]\|CXXABI_1.3.15"; then
  for f in "$vvl_dir"/libstdc++6_*.deb "$vvl_dir"/libgcc-s1_*.deb; do dpkg -x "$f" "$vvl_root/runtime"; done
  export LD_LIBRARY_PATH="$(dirname "$(find "$vvl_root/runtime" -name 'libstdc++.so.6' | head -1)"):$LD_LIBRARY_PATH"
  echo "validation layer: this machine's libstdc++ is older than GCC 14's; using Debian 13's"
fi
if ldd "$vvl_so" 2>&1 | grep -q "not found"; then
  echo "validation layer: cannot load here:" >&2; ldd "$vvl_so" 2>&1 | grep "not found" >&2
  return 1 2>/dev/null || exit 1
fi
# (bench/gpuav.sh reads it: it refuses GPU-AV on layers older than the oldest one checked.)
export DENOX_VVL_VERSION=$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$vvl_root/layers/VkLayer_khronos_validation.json" | head -1)
echo "validation layer: loader $(basename "$(readlink -f "$(find "$vvl_root/loader" -name libvulkan.so.1 | head -1)")"), layer $DENOX_VVL_VERSION ready"
EOS
du -sh "$dir" | awk '{print "fetch-validation-layer: staged " $2 " (" $1 ")"}'
