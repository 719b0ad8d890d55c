#!/usr/bin/env bash
# The one-node watchdog's benchmark on real Open MPI jobs (not a test: it prints figures).
#  1. overhead: a fixed-work 4-rank stencil run twice at the same time (so machine noise hits both),
#     one under `parastack run`, one not; the slots swap every round. Prints the run-time ratio.
#  2. detection delay: RUNS 4-rank solver jobs, each made to hang on a random rank by the fault
#     injector 5-20 s after parastack's model is built, kinds in turn spin / sleep / deadlock;
#     prints each verdict and the delay from the fault to the confirmed hang, median and p95.
# Usage: bench/watchdog.sh [rounds (default 3)] [hang runs (default 21)] [stencil iterations (default 150000)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
runs=${2:-21}
iterations=${3:-150000}
bin=$PWD/build/monitor/parastack
programs=$PWD/build/tests/programs
[ -x "$bin" ] && [ -x "$programs/ps_solver" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d)
cleanup() {
  pkill -9 -f "^$programs/" 2>/dev/null || true
  pkill -9 -f "^$bin run" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo
echo "== 1. overhead: 4-rank stencil, $iterations iterations, with and without parastack, at the same time"
printf "| round | without s | with parastack s | ratio |\n|---:|---:|---:|---:|\n"
ratios=()
for round in $(seq 1 "$rounds"); do
  plain=(mpirun --oversubscribe -np 4 "$programs/ps_target" healthy "$iterations")
  watched=("$bin" run --report "$work/overhead.json" -- "${plain[@]}")
  if (( round % 2 )); then
    "${plain[@]}" >"$work/a" 2>&1 & a=$!
    "${watched[@]}" >"$work/b" 2>"$work/b.log" & b=$!
  else
    "${watched[@]}" >"$work/b" 2>"$work/b.log" & b=$!
    "${plain[@]}" >"$work/a" 2>&1 & a=$!
  fi
  wait "$a" "$b"
  t_plain=$(awk '/elapsed/ {print $2}' "$work/a")
  t_watched=$(awk '/elapsed/ {print $2}' "$work/b")
  ratio=$(awk -v w="$t_watched" -v p="$t_plain" 'BEGIN {printf "%.3f", w / p}')
  ratios+=("$ratio")
  echo "| $round | $t_plain | $t_watched | $ratio |"
done
echo "ratio median: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"

echo
echo "== 2. detection delay over $runs injected hangs (4-rank solver, default settings)"
printf "| run | fault | rank | fired s after model | verdict | hang type | faulty | delay s |\n|---:|---|---:|---:|---|---|---|---:|\n"
kinds=(spin sleep deadlock)
delays=()
for run in $(seq 1 "$runs"); do
  kind=${kinds[$(( (run - 1) % 3 ))]}
  rank=$(( RANDOM % 4 ))
  mkdir -p "$work/ready$run"
  # The fault fires at a random moment 5-20 s after the model is built (a hang before that cannot
  # be told from normal behaviour: docs/user-guide.md, limits); 5 minutes at most per run.
  PS_READY_DIR="$work/ready$run" timeout 300 "$bin" run --report "$work/hang$run.json" -- \
    mpirun --oversubscribe -np 4 -x LD_PRELOAD="$programs/libps_fault.so" -x PS_FAULT_KIND=$kind \
    -x PS_FAULT_RANK=$rank -x PS_FAULT_AFTER_SECONDS=1e9 -x PS_FAULT_TRIGGER_FILE="$work/fire$run" \
    "$programs/ps_solver" blocking 600 >/dev/null 2>"$work/hang$run.log" &
  watchdog=$!
  until grep -q "model built" "$work/hang$run.log" 2>/dev/null || ! kill -0 $watchdog 2>/dev/null; do sleep 0.2; done
  after=$(( 5 + RANDOM % 16 ))
  sleep "$after"
  touch "$work/fire$run"
  status=0
  wait $watchdog || status=$?
  onset=$(stat -c %.Y "$work/ready$run/fault.$rank" 2>/dev/null || echo "")
  read -r verdict type faulty detected < <(python3 -c "
import json,sys
r=json.load(open('$work/hang$run.json'))
print(r['verdict'], r.get('hang_type','-'), ','.join(map(str,r['faulty_ranks'])) or '-', r.get('detected_at',0))")
  delay=$(awk -v d="$detected" -v o="$onset" 'BEGIN {if (o == "" || d == 0) print "-"; else printf "%.1f", d - o}')
  [ "$delay" != "-" ] && delays+=("$delay")
  echo "| $run | $kind | $rank | $after | $verdict (exit $status) | $type | $faulty | $delay |"
done
printf '%s\n' "${delays[@]}" | sort -n | awk '{v[NR]=$1} END {
  if (NR == 0) {print "no hang detected"; exit}
  p95 = int(0.95 * NR + 0.999); if (p95 > NR) p95 = NR
  printf "detected %d of the runs; delay median %.1f s, p95 %.1f s, min %.1f s, max %.1f s\n", NR, v[int((NR+1)/2)], v[p95], v[1], v[NR]}'
