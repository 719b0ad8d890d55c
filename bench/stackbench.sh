#!/usr/bin/env bash
# The STATBench-style emulator of the stack-trace merge (docs/diagnosis.md): emulated monitors
# (threads) build call-graph prefix trees from synthetic traces and merge them flat or through a
# k-ary tree, with rank sets as bit vectors or range strings, up to 1,048,576 emulated ranks.
# Prints the table and whether the goals hold (131,072 ranks < 1 s, 1,048,576 ranks < 10 s).
# Usage: bench/stackbench.sh [build dir (default build)] [extra parastack-bench stackbench options]
#   e.g. bench/stackbench.sh build --monitors 4096 --tasks 256 --classes 64 --depth 20 --samples 10
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
bin=$build/bench/parastack-bench
[ -x "$bin" ] || { echo "build first: cmake -S . -B $build -G Ninja && cmake --build $build" >&2; exit 1; }
echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$bin" stackbench "$@"
