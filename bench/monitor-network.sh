#!/usr/bin/env bash
# The monitor network's benchmark (not a test: it prints figures). MONITORS parastack-monitor-bench
# processes under one mpirun each pretend to hold RANKS/MONITORS ranks (synthetic states, and
# STATBench's synthetic stack traces), and the leader measures through the real requests and
# reductions: the time to gather the rank table, its work per sample, the time to merge every
# rank's stack tree, and (first size only) the CPU an idle monitor uses over IDLE seconds.
# Usage: bench/monitor-network.sh [monitors (default 64)] [idle seconds (default 60)] [sizes...]
set -euo pipefail
cd "$(dirname "$0")/.."
monitors=${1:-64}
idle=${2:-60}
shift $(( $# > 2 ? 2 : $# ))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(4096 65536 1048576)
bin=${PARASTACK_BUILD:-$PWD/build}/bench/parastack-monitor-bench
[ -x "$bin" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $monitors monitor processes"
first=1
for ranks in "${sizes[@]}"; do
  seconds=$(( first ? idle : 1 ))
  out=$(mpirun --oversubscribe -np "$monitors" "$bin" --emulate-ranks "$ranks" --idle-seconds "$seconds")
  if (( first )); then echo "$out" | grep -v '^idle'; else echo "$out" | grep '^| [0-9]'; fi
  (( first )) && idle_line=$(echo "$out" | grep '^idle')
  first=0
done
echo "$idle_line"
