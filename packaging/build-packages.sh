#!/usr/bin/env bash
# The Debian packages parastack and parastack-slurm (packaging/packages.cmake), and the source
# tarball packaging/parastack.spec builds RPMs from, in BUILD_DIR (default build-packages):
# Release with the default options, the product only, prefix /usr. BUILD_DIR may be a Release tree
# configured with prefix /usr and the tests (the test command's build-release): it is reconfigured
# for the product only and its objects are reused.
# Usage: packaging/build-packages.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-packages}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPARASTACK_BUILD_TESTS=OFF -DPARASTACK_BUILD_BENCH=OFF \
  -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" -j"$(nproc)"
cmake --build "$build" --target package package_source >/dev/null
ls -1 "$build"/*.deb "$build"/parastack-*.tar.gz
