#!/usr/bin/env bash
# The whole test suite, from a clean clone on a fresh Debian 12 machine: installs what it needs,
# builds, and runs every test (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake -S . -B build -G Ninja
cmake --build build
ctest --test-dir build --output-on-failure -j"$(nproc)"
