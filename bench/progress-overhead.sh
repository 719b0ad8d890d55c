#!/usr/bin/env bash
# What the progress library (libparastack-progress.so, preloaded into every rank) costs a
# message-heavy MPI job (not a test: it prints a Markdown table). Each round runs ps_msgrate
# (bench/tools/ps_msgrate.c: fixed work, nothing but small MPI_Irecv/MPI_Isend/MPI_Waitall and an
# MPI_Allreduce every 100 iterations) twice at the same time, so machine noise hits both: one job
# plain, one with `mpirun -x LD_PRELOAD=libparastack-progress.so`; which one starts first swaps every
# round. Each mpirun has a session directory of its own (two mpiruns starting together can
# otherwise remove each other's). Per round: both wall times (between the barriers that bracket
# ps_msgrate's timed part), their ratio and both jobs' MPI calls per second per rank; then the
# median ratio.
#
# Every run has a time limit, and every process the script starts carries PARASTACK_BENCH_TAG in
# its environment (mpirun hands it to the ranks), so the cleanup, after each round and on exit,
# kills exactly those, orphans included.
#
# Usage: bench/progress-overhead.sh [options]   (each option also as the environment variable shown)
#   --build DIR               BUILD_DIR            build directory                      build
#   --rounds N                ROUNDS               rounds                               7
#   --ranks N                 RANKS                ranks per job                        4
#   --iterations N            ITERATIONS           ps_msgrate iterations per job        300000
#   --window W                WINDOW               messages to each neighbour per iteration  4
#   --time-limit S            TIME_LIMIT           seconds before a round's jobs are killed  600
#   --keep                    KEEP=1               keep the work directory (outputs) at the end
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
ROUNDS=${ROUNDS:-7}
RANKS=${RANKS:-4}
ITERATIONS=${ITERATIONS:-300000}
WINDOW=${WINDOW:-4}
TIME_LIMIT=${TIME_LIMIT:-600}
KEEP=${KEEP:-0}

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD_DIR=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --ranks) RANKS=$2 ;;
    --iterations) ITERATIONS=$2 ;;
    --window) WINDOW=$2 ;;
    --time-limit) TIME_LIMIT=$2 ;;
    --keep) KEEP=1; shift; continue ;;
    *) usage ;;
  esac
  [ $# -ge 2 ] || usage
  shift 2
done

build=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory $BUILD_DIR" >&2; exit 1; }
msgrate=$build/bench/ps_msgrate
library=$build/mpi_progress/libparastack-progress.so
for f in "$msgrate" "$library"; do
  [ -e "$f" ] || { echo "missing $f: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

work=$(mktemp -d /tmp/parastack-bench.XXXXXX)
tag=parastack-bench-$$

# shellcheck source=bench/tagged_processes.sh
source bench/tagged_processes.sh  # (the script runs from the top of the tree)

# job NAME [mpirun options...]: ps_msgrate in the background, its output in $work/NAME, its own
# session directory; sets `pid`.
job() {
  local name=$1
  shift
  mkdir -p "$work/$name.session"
  PARASTACK_BENCH_TAG=$tag.round OMPI_MCA_orte_top_session_dir="$work/$name.session" \
    timeout -k 10 "$TIME_LIMIT" mpirun --oversubscribe -np "$RANKS" "$@" \
    "$msgrate" --iterations "$ITERATIONS" --window "$WINDOW" >"$work/$name" 2>&1 </dev/null &
  pid=$!
}

# "S R": elapsed seconds and calls/s/rank from a ps_msgrate output, "- -" if it did not finish.
read_result() {
  awk '/^calls / {print $4, $6; found = 1} END {if (!found) print "- -"}' "$1"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); build $build"
echo
echo "== progress library overhead: $RANKS-rank ps_msgrate ($ITERATIONS iterations, window $WINDOW), plain and with the library, at the same time"
printf "| round | plain s | with library s | ratio | calls/s/rank plain | calls/s/rank with library |\n"
printf "|---:|---:|---:|---:|---:|---:|\n"
ratios=()
for round in $(seq 1 "$ROUNDS"); do
  if (( round % 2 )); then
    job plain; a=$pid
    job preloaded -x LD_PRELOAD="$library"; b=$pid
  else
    job preloaded -x LD_PRELOAD="$library"; b=$pid
    job plain; a=$pid
  fi
  status_plain=0 status_preloaded=0
  wait "$a" || status_plain=$?
  wait "$b" || status_preloaded=$?
  kill_started round
  read -r t_plain rate_plain < <(read_result "$work/plain")
  read -r t_preloaded rate_preloaded < <(read_result "$work/preloaded")
  if [ "$t_plain" != - ] && [ "$t_preloaded" != - ]; then
    ratio=$(awk -v w="$t_preloaded" -v p="$t_plain" 'BEGIN {printf "%.3f", w / p}')
    ratios+=("$ratio")
  else
    ratio="- (exit $status_plain plain, $status_preloaded with the library)"
  fi
  echo "| $round | $t_plain | $t_preloaded | $ratio | $rate_plain | $rate_preloaded |"
done
if [ ${#ratios[@]} -gt 0 ]; then
  echo "ratio median: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
else
  echo "ratio median: - (no round finished)"
fi
