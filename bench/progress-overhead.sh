#!/usr/bin/env bash
# What the progress library (libparastack-progress.so, preloaded into every rank) costs a
# message-heavy MPI job (not a test: it prints Markdown tables).
#
# The job is ps_msgrate (bench/tools/ps_msgrate.c): a fixed amount of computation per iteration,
# then small MPI_Irecv/MPI_Isend to both ring neighbours, one MPI_Waitall, and an MPI_Allreduce
# every 100 iterations. For each target call rate (MPI calls per second per rank; 0 means no
# computation at all, nothing but MPI calls) the script first calibrates the computation per
# iteration and the iterations for about SECONDS of run time, then runs PAIRS pairs of the same
# job, plain and with `mpirun -x LD_PRELOAD=libparastack-progress.so`, one right after the other
# (which one goes first alternates), and takes each pair's time ratio. The jobs run one at a time
# with one rank per core: two jobs at once on a 2-core machine oversubscribe it, and their noise
# (about 10 %) hides a cost of 1 or 2 %. Pairing takes out slow drifts of the machine.
#
# Per rate: the plain job's calls/s/rank, both median times, the median ratio with its 95 %
# confidence interval (distribution-free: order statistics of the pair ratios), and the overhead
# it means. Times are ps_msgrate's own, between the two barriers that bracket its loop, so
# mpirun's start-up is not in them.
#
# Every run has a time limit, and every process the script starts carries PARASTACK_BENCH_TAG in
# its environment (mpirun hands it to the ranks), so the cleanup, after each run and on exit,
# kills exactly those, orphans included.
#
# Usage: bench/progress-overhead.sh [options]   (each option also as the environment variable shown)
#   --build DIR               BUILD_DIR            build directory                          build
#   --rates "R..."            RATES                target MPI calls/s/rank (0: no compute)  "100000 300000 1000000 0"
#   --pairs N                 PAIRS                pairs per rate                           21
#   --seconds S               SECONDS_PER_RUN      run time each job is calibrated to       2
#   --ranks N                 RANKS                ranks per job                            cores
#   --window W                WINDOW               messages to each neighbour per iteration 4
#   --time-limit S            TIME_LIMIT           seconds before a job is killed           300
#   --keep                    KEEP=1               keep the work directory (outputs) at the end
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
RATES=${RATES:-100000 300000 1000000 0}
PAIRS=${PAIRS:-21}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-2}
RANKS=${RANKS:-$(nproc)}
WINDOW=${WINDOW:-4}
TIME_LIMIT=${TIME_LIMIT:-300}
KEEP=${KEEP:-0}

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD_DIR=$2 ;;
    --rates) RATES=$2 ;;
    --pairs) PAIRS=$2 ;;
    --seconds) SECONDS_PER_RUN=$2 ;;
    --ranks) RANKS=$2 ;;
    --window) WINDOW=$2 ;;
    --time-limit) TIME_LIMIT=$2 ;;
    --keep) KEEP=1; shift; continue ;;
    *) usage ;;
  esac
  [ $# -ge 2 ] || usage
  shift 2
done
if ! [[ $PAIRS =~ ^[0-9]+$ ]] || [ "$PAIRS" -lt 6 ]; then
  echo "--pairs: at least 6 (for a 95 % interval)" >&2
  exit 2
fi

build=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory $BUILD_DIR" >&2; exit 1; }
msgrate=$build/bench/ps_msgrate
library=$build/mpi_progress/libparastack-progress.so
for f in "$msgrate" "$library"; do
  [ -e "$f" ] || { echo "missing $f: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
placement=()
if [ "$RANKS" -gt "$(nproc)" ]; then
  # More ranks than cores: the figures then carry the oversubscription's noise.
  placement=(--oversubscribe)
  export OMPI_MCA_mpi_yield_when_idle=1
fi

work=$(mktemp -d /tmp/parastack-bench.XXXXXX)
tag=parastack-bench-$$

# shellcheck source=bench/tagged_processes.sh
source bench/tagged_processes.sh  # (the script runs from the top of the tree)

# run NAME ITERATIONS WORK [mpirun options...]: one ps_msgrate job, waited for; its output in
# $work/NAME. Prints "SECONDS CALLS" (the timed part, one rank's calls), or fails.
run() {
  local name=$1 iterations=$2 steps=$3 status=0
  shift 3
  PARASTACK_BENCH_TAG=$tag.run timeout -k 10 "$TIME_LIMIT" mpirun "${placement[@]}" -np "$RANKS" "$@" \
    "$msgrate" --iterations "$iterations" --work "$steps" --window "$WINDOW" >"$work/$name" 2>&1 </dev/null ||
    status=$?
  kill_started run
  if [ $status -ne 0 ] || ! grep -q '^calls ' "$work/$name"; then
    echo "ps_msgrate failed (exit $status):" >&2
    tail -5 "$work/$name" >&2
    return 1
  fi
  awk '/^calls / {print $4, $2}' "$work/$name"
}

# calibrate RATE: sets `iterations` and `steps` so that a plain job makes about RATE calls/s/rank
# (0: no computation) for about SECONDS_PER_RUN.
calibrate() {
  local rate=$1 t0 c0 t1 result
  result=$(run calibrate-0 20000 0)
  read -r t0 c0 <<<"$result"
  result=$(run calibrate-1 2000 20000)
  read -r t1 _ <<<"$result"
  # Per iteration: MPI time m (from the job without computation), one computation step s.
  read -r iterations steps < <(awk -v t0="$t0" -v t1="$t1" -v c="$c0" -v rate="$rate" -v T="$SECONDS_PER_RUN" 'BEGIN {
      m = t0 / 20000; s = (t1 / 2000 - m) / 20000; per_iteration = c / 20000
      if (s <= 0) s = 1e-9
      steps = rate > 0 ? int((per_iteration / rate - m) / s) : 0
      if (steps < 0) steps = 0
      n = int(T / (m + steps * s)); if (n < 1000) n = 1000
      print n, steps }')
}

# median and 95 % interval of the numbers on stdin: "MEDIAN LOW HIGH". The interval is the order
# statistics [x(k), x(n+1-k)] with the largest k for which P(Binomial(n, 1/2) < k) <= 2.5 %.
median_interval() {
  sort -g | awk '{x[NR] = $1} END {
    n = NR; median = n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2
    p = 0.5 ^ n; cdf = 0; k = 0
    for (i = 0; i < n; ++i) { cdf += p; if (cdf > 0.025) break; k = i + 1; p = p * (n - i) / (i + 1) }
    if (k < 1) k = 1
    print median, x[k], x[n + 1 - k] }'
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); build $build"
echo "$RANKS ranks per job, $PAIRS pairs per rate, about $SECONDS_PER_RUN s per job, window $WINDOW"
echo
echo "== progress library overhead: ps_msgrate plain and with the library, run in pairs one after the other"
printf "| target calls/s/rank | work steps | calls/s/rank plain | plain s (median) | with library s (median) | ratio median | 95 %% interval | overhead |\n"
printf "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
details=()
for rate in $RATES; do
  calibrate "$rate"
  ratios=() plain_times=() library_times=() plain_rates=()
  for pair in $(seq 1 "$PAIRS"); do
    if (( pair % 2 )); then order="plain library"; else order="library plain"; fi
    for variant in $order; do
      if [ "$variant" = plain ]; then
        result=$(run plain "$iterations" "$steps")
        read -r t_plain calls <<<"$result"
      else
        result=$(run library "$iterations" "$steps" -x LD_PRELOAD="$library")
        read -r t_library calls <<<"$result"
      fi
    done
    plain_times+=("$t_plain") library_times+=("$t_library")
    plain_rates+=("$(awk -v c="$calls" -v t="$t_plain" 'BEGIN {printf "%.0f", c / t}')")
    ratios+=("$(awk -v a="$t_library" -v b="$t_plain" 'BEGIN {printf "%.4f", a / b}')")
  done
  read -r ratio low high < <(printf '%s\n' "${ratios[@]}" | median_interval)
  read -r plain_s _ < <(printf '%s\n' "${plain_times[@]}" | median_interval)
  read -r library_s _ < <(printf '%s\n' "${library_times[@]}" | median_interval)
  read -r plain_rate _ < <(printf '%s\n' "${plain_rates[@]}" | median_interval)
  plain_rate=$(printf '%.0f' "$plain_rate")
  overhead=$(awk -v r="$ratio" -v l="$low" -v h="$high" 'BEGIN {printf "%+.1f %% (%+.1f to %+.1f)", (r - 1) * 100, (l - 1) * 100, (h - 1) * 100}')
  echo "| $rate | $steps | $plain_rate | $plain_s | $library_s | $ratio | $low - $high | $overhead |"
  details+=("rate $rate: pair ratios (library/plain) $(printf '%s ' "${ratios[@]}")")
done
echo
printf '%s\n' "${details[@]}"
