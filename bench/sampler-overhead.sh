#!/usr/bin/env bash
# The node sampler's benchmarks on real Open MPI ranks:
#  1. stop time and monitor CPU per sample: bare stop vs fast path vs naive libunwind-ptrace path,
#     interleaved on the same ranks (parastack-bench sample-bench);
#  2. application slowdown: two identical stencil jobs run at the same time (so machine noise hits
#     both), one sampled every 100 ms, one not; roles swap every round.
# Usage: bench/sampler-overhead.sh [rounds (default 5)] [iterations per job (default 40000, about 8 s)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
iterations=${2:-40000}
bin=build/bench/parastack-bench
target=build/tests/programs/ps_target
[ -x "$bin" ] && [ -x "$target" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  pkill -9 -f "^$PWD/$target" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== 1. cost of one sample (2 ranks: one computing, one blocked in MPI_Barrier; 300 rounds)"
mkdir -p "$work/ready"
PS_READY_DIR="$work/ready" mpirun --oversubscribe -np 2 "$PWD/$target" barrier compute >/dev/null 2>&1 &
job=$!
pids+=("$job")
until [ "$(ls "$work/ready" | wc -l)" -ge 2 ]; do
  kill -0 "$job" 2>/dev/null || { echo "the target job died" >&2; exit 1; }
  sleep 0.05
done
"$bin" sample-bench --pid "$job" --rounds 300
kill "$job"; wait "$job" 2>/dev/null || true

echo
echo "== 2. application slowdown: 2-rank stencil, $iterations iterations, sampled every 100 ms vs not"
printf "| round | unsampled s | sampled s | ratio |\n|---:|---:|---:|---:|\n"
for round in $(seq 1 "$rounds"); do
  PS_READY_DIR="$work/ready" mpirun --oversubscribe -np 2 "$PWD/$target" healthy "$iterations" >"$work/a" 2>&1 &
  a=$!
  PS_READY_DIR="$work/ready" mpirun --oversubscribe -np 2 "$PWD/$target" healthy "$iterations" >"$work/b" 2>&1 &
  b=$!
  pids+=("$a" "$b")
  # Alternate which job is sampled, so a systematic difference between the two slots cancels out.
  if (( round % 2 )); then sampled=$a; plain=b; watched=a; else sampled=$b; plain=a; watched=b; fi
  "$bin" sample-bench --pid "$sampled" --loop 0.1 >"$work/loop" 2>&1 &
  wait "$a" "$b"
  wait || true
  t_plain=$(awk '/elapsed/ {print $2}' "$work/$plain")
  t_watched=$(awk '/elapsed/ {print $2}' "$work/$watched")
  echo "| $round | $t_plain | $t_watched | $(awk -v s="$t_watched" -v p="$t_plain" 'BEGIN {printf "%.3f", s / p}') |"
done
