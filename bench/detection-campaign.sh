#!/usr/bin/env bash
# The statistics core's benchmark: a Monte Carlo campaign of synthetic MPI jobs (13 workload shapes,
# 1100 healthy job-hours and 150 injected hangs each: 14,300 job-hours) watched by the real model,
# in the default mode, in the S-only mode parastack used before stasis evidence (s-only), and with
# the paper's rule. Prints one Markdown table per mode and its wall time. The default mode samples
# every set every 0.1 s: about 40 minutes on 2 cores (polling-phases, whose low phases raise an
# alarm every few seconds for verification to judge, about half of it); the other two about 5
# minutes each.
# Usage: bench/detection-campaign.sh [extra `parastack simulate` options, e.g. --seed 7]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/monitor/parastack
[ -x "$bin" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for mode in default s-only paper; do
  TIMEFORMAT="(mode $mode: %R s wall, %U s user CPU)"
  time "$bin" simulate --modes "$mode" --healthy-hours 1100 --hangs 150 "$@"
done
