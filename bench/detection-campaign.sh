#!/usr/bin/env bash
# The statistics core's benchmark: a Monte Carlo campaign of synthetic MPI jobs (9 workload shapes,
# 1300 healthy job-hours and 150 injected hangs each) watched by the real model, once in the
# default mode and once with the paper's rule. Prints one Markdown table per mode and its wall time.
# Usage: bench/detection-campaign.sh [extra `parastack simulate` options, e.g. --seed 7]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/monitor/parastack
[ -x "$bin" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for mode in default paper; do
  TIMEFORMAT="(mode $mode: %R s wall, %U s user CPU)"
  time "$bin" simulate --modes "$mode" --healthy-hours 1300 --hangs 150 "$@"
done
