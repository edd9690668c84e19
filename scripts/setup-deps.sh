#!/usr/bin/env bash
# Makes a fresh Debian 12 machine ready to build and test denox. Idempotent: a second run
# checks its stamps and does nothing.
#
#  1. Debian 12 packages (compiler, cmake, protobuf + libonnx, flatbuffers, SQLite, spdlog,
#     Catch2, CLI11, Mesa's lavapipe, the Khronos validation layer, image libraries).
#  2. Into .deps/prefix (git-ignored), what Debian 12 is too old for, from Debian 13 "trixie":
#     glslang 15 built from source (GL_KHR_cooperative_matrix), the Vulkan 1.4 headers and volk
#     (header/source packages), and the ONNX backend node tests (libonnx-testdata, arch "all").
#     A private apt sources file and list directory leave the system's apt configuration alone.
#  3. Into .deps/lavapipe, Mesa 25's lavapipe from Debian 12's backports for the tests Debian
#     12's llvmpipe computes wrong (the library and a manifest; the system's Mesa is left alone).
#
# Set DENOX_SKIP_DEPS=1 on a machine that already has all of this (e.g. a Vulkan SDK).
set -euo pipefail
[ "${DENOX_SKIP_DEPS:-0}" = 1 ] && exit 0

# The versions this project was last built and tested with. apt fetches exactly these while the
# archive still carries them; once a point release replaces one, the setup takes the archive's
# version and warns (the archives keep only a suite's current versions, so a hard pin would
# break every fresh setup then). .deps/VERSIONS names what was taken.
tested_trixie=(libvulkan-dev=1.4.309.0-1 libvulkan-volk-dev=1.4.304.0-1 libonnx-testdata=1.17.0-3)
tested_glslang_source=15.1.0+1.4.309.0-1
tested_mesa_backport=25.0.7-2~bpo12+1

root=$(cd "$(dirname "$0")/.." && pwd)
deps="$root/.deps"
prefix="$deps/prefix"
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

# apt-get download/source (the first arguments up to "--") of package=version, or of the
# archive's current version with a warning where that version is gone. Prints nothing.
fetch_tested() {
  local cmd=() spec
  while [ "$1" != "--" ]; do cmd+=("$1"); shift; done
  shift
  for spec in "$@"; do
    if ! "${cmd[@]}" "$spec" 2>/dev/null; then
      echo "setup-deps: WARNING: could not fetch ${spec%%=*} ${spec#*=}, the version denox was tested with (gone from the" \
           "archive after a point release, or the fetch failed); trying its current version (.deps/VERSIONS names it)" >&2
      "${cmd[@]}" "${spec%%=*}" || return 1
    fi
  done
}

apt_packages=(
  build-essential cmake ninja-build pkg-config git file dpkg-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
  libflatbuffers-dev flatbuffers-compiler
  libsqlite3-dev sqlite3 libxxhash-dev libspdlog-dev libfmt-dev catch2 libcli11-dev nlohmann-json3-dev
  libpng-dev libstb-dev
  libvulkan1 mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  python3 python3-numpy python3-torch python3-onnx
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Mesa 25's lavapipe from Debian 12's backports, into .deps/lavapipe, for the tests Debian 12's
# own llvmpipe (Mesa 22.3) computes wrong (src/kernels/int8.md says which). Only the driver
# library and a manifest naming it (relative to the manifest, so the checkout can move):
# CMake points those tests at it (VK_DRIVER_FILES, DENOX_TEST_MESA25_DRIVER in CMakeLists.txt);
# the system's Mesa stays as it is. Not fatal: where it cannot be had (backports unreachable, a
# later Mesa there needing libraries Debian 12 lacks), the setup warns and CTest reports those
# tests as skipped. Assembled in a scratch folder and moved into place once the loader opens it.
fetch_lavapipe() {
  local work="$deps/bpo" dest="$deps/lavapipe" version api icd
  rm -rf "$work" "$dest" && mkdir -p "$work/lists/partial" "$work/debs" "$work/lavapipe" || return 1
  echo "deb http://deb.debian.org/debian bookworm-backports main" > "$work/sources.list"
  local bpo_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
                  -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
  echo "setup-deps: lavapipe from Debian 12 backports (private sources file)"
  apt-get "${bpo_opts[@]}" update -qq || return 1
  (cd "$work/debs" && fetch_tested apt-get "${bpo_opts[@]}" download -qq -- "mesa-vulkan-drivers=$tested_mesa_backport") || return 1
  dpkg -x "$work"/debs/mesa-vulkan-drivers_*.deb "$work/extract" || return 1
  version=$(dpkg-deb -f "$work"/debs/mesa-vulkan-drivers_*.deb Version) || return 1
  case "$version" in
    2[5-9].*|[3-9][0-9].*) ;;
    *) echo "setup-deps: bookworm-backports has mesa-vulkan-drivers $version, not 25 or later" >&2; return 1 ;;
  esac
  cp "$work/extract/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libvulkan_lvp.so" "$work/lavapipe/" || return 1
  icd=$(ls "$work"/extract/usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1)
  api=$([ -n "$icd" ] && sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$icd")
  if [ -z "$api" ]; then echo "setup-deps: no lavapipe manifest with an api_version in mesa-vulkan-drivers $version" >&2; return 1; fi
  cat > "$work/lavapipe/lvp_icd.json" <<JSON
{
  "file_format_version": "1.0.0",
  "ICD": {"library_path": "./libvulkan_lvp.so", "api_version": "$api"}
}
JSON
  echo "$version" > "$work/lavapipe/VERSION"
  # It links Debian 12's libllvm15 and libdrm: check that the loader can open it here. (The
  # output is read whole first: grep -q stopping early would fail vulkaninfo under pipefail.)
  local summary
  summary=$(VK_DRIVER_FILES="$work/lavapipe/lvp_icd.json" vulkaninfo --summary 2>/dev/null || true)
  if ! grep -q "Mesa 25\|Mesa 2[6-9]\|Mesa [3-9][0-9]" <<< "$summary"; then
    echo "setup-deps: the Vulkan loader cannot open libvulkan_lvp.so of mesa-vulkan-drivers $version (bookworm-backports;" \
         "vulkaninfo with VK_DRIVER_FILES finds no Mesa 25 device). Libraries it lacks here:" \
         "$(ldd "$work/lavapipe/libvulkan_lvp.so" | grep 'not found' || echo none)" >&2
    return 1
  fi
  mv "$work/lavapipe" "$dest" && rm -rf "$work" || return 1
  echo "setup-deps: lavapipe from Mesa $version in $dest"
}
lvp_stamp="$deps/lavapipe-v2.stamp"
if [ ! -f "$lvp_stamp" ] || [ ! -f "$deps/lavapipe/lvp_icd.json" ]; then
  if fetch_lavapipe; then
    touch "$lvp_stamp"
  else
    rm -rf "$deps/bpo" "$deps/lavapipe"
    echo "setup-deps: WARNING: no Mesa 25 lavapipe; the tests named 'mesa25: ...' will be reported as skipped" >&2
  fi
fi

# .deps/VERSIONS: what the last fetches took, rewritten on every run (the lavapipe may be fetched
# again while the Debian 13 pieces stay).
write_versions() {
  { [ -f "$deps/VERSIONS.trixie" ] && cat "$deps/VERSIONS.trixie"
    [ -f "$deps/lavapipe/VERSION" ] && echo "mesa-vulkan-drivers $(cat "$deps/lavapipe/VERSION") (Debian 12 backports, lavapipe only)"
    true; } > "$deps/VERSIONS"
}

# Pieces from Debian 13. Bump this stamp when the list below changes.
stamp="$deps/trixie-v2.stamp"
if [ -f "$stamp" ]; then
  write_versions
  exit 0
fi

rm -rf "$deps/extract"
mkdir -p "$deps/apt/lists/partial" "$deps/debs" "$deps/src" "$prefix"
cat > "$deps/apt/sources.list" <<'SRC'
deb http://deb.debian.org/debian trixie main
deb-src http://deb.debian.org/debian trixie main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$deps/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$deps/apt/lists" -o "APT::Sandbox::User=root")
echo "setup-deps: fetching Debian 13 package lists (private sources file)"
apt-get "${apt_opts[@]}" update -qq

echo "setup-deps: Vulkan 1.4 headers, volk, ONNX backend test data"
(cd "$deps/debs" && rm -f ./*.deb && fetch_tested apt-get "${apt_opts[@]}" download -qq -- "${tested_trixie[@]}")
for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps/extract"; done
# share/cmake must exist first, or cp would make the VulkanHeaders folder itself share/cmake.
mkdir -p "$prefix/include" "$prefix/share/cmake"
cp -a "$deps/extract/usr/include/vulkan" "$deps/extract/usr/include/vk_video" "$prefix/include/"
cp -a "$deps/extract/usr/include/volk.h" "$prefix/include/"
# volk.c is compiled into libdenox (see CMakeLists.txt); trixie ships it beside volk.h.
cp -a "$deps/extract/usr/include/volk.c" "$prefix/include/"
rm -rf "$prefix/share/onnx-node-tests" "$prefix/share/cmake/VulkanHeaders"
cp -a "$deps/extract/usr/share/cmake/VulkanHeaders" "$prefix/share/cmake/"
node_dir="$deps/extract/usr/share/libonnx-testdata/data/node"
[ -d "$node_dir" ] || { echo "setup-deps: libonnx-testdata has no data/node folder" >&2; exit 1; }
cp -a "$node_dir" "$prefix/share/onnx-node-tests"

echo "setup-deps: building glslang 15 from Debian 13 sources (about 2 minutes on 2 cores)"
rm -rf "$deps/src" && mkdir -p "$deps/src"
# The upstream tarball, without Debian's patches (they make the build require SPIRV-Tools via
# pkg-config, which Debian 12's SPIRV-Tools is too old for and ENABLE_OPT=OFF does not need).
(cd "$deps/src" && fetch_tested apt-get "${apt_opts[@]}" source -qq --download-only -- "glslang=$tested_glslang_source" \
  && mkdir glslang && tar -xzf glslang_*.orig.tar.gz -C glslang --strip-components=1)
{
  for deb in "$deps"/debs/*.deb; do echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version) (Debian 13)"; done
  echo "glslang $(sed -n 's/^Version: //p' "$deps"/src/glslang_*.dsc | head -1) (Debian 13 source, upstream tarball)"
} > "$deps/VERSIONS.trixie"
cmake -S "$deps/src/glslang" -B "$deps/src/glslang-build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DENABLE_OPT=OFF -DGLSLANG_TESTS=OFF -DBUILD_SHARED_LIBS=OFF -DENABLE_GLSLANG_BINARIES=ON \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGLSLANG_ENABLE_INSTALL=ON >/dev/null
cmake --build "$deps/src/glslang-build" -j"$(nproc)"
cmake --install "$deps/src/glslang-build" >/dev/null
rm -rf "$deps/src" "$deps/extract"
touch "$stamp"
write_versions
sed 's/^/setup-deps:   /' "$deps/VERSIONS"
echo "setup-deps: ready ($prefix)"
