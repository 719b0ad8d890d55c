#!/usr/bin/env bash
# Who started it: how often a hang's report names the least-progressed (LP) rank, on real Open MPI
# jobs (not a test: it prints Markdown tables). docs/diagnosis.md, "Who is behind".
#
# Each run: tests/programs/ps_progress (ring exchanges, world and half-communicator collectives)
# of RANKS ranks under `parastack run --mpi-progress`, with one fault on a random rank at a random
# time FAULT_WINDOW seconds after MPI_Init:
#   skip-collective  the rank skips an MPI_Allreduce (it then waits in the next ring exchange)
#   deadlock-pair    the rank and its right neighbour receive from each other (a true deadlock)
#   wrong-tag        the rank receives from its left neighbour with a tag nobody sends
#   compute          the rank computes forever outside MPI
#   poller-deadlock  (not among the defaults) tests/programs/ps_poller instead, whose ranks wait
#                    only in MPI_Test/MPI_Iprobe loops: the rank blocks in a receive nobody sends,
#                    the others poll for its halo for ever (hpcc's deadlock beside pollers). The
#                    library cannot say on whom pollers wait: the right answer is the rank or
#                    nobody, and a poller named is a wrong rank.
# The ground truth is the faulty rank (both ranks of the pair). Per run the report's LP ranks from
# the progress library and, from the same hang, from the stacks alone; a run "names" the truth
# when the LP set is exactly it, and names a "wrong rank" when the set holds any other rank.
# WITHOUT_RUNS more runs per (ranks, kind) go without the library: the stacks-only rule as users
# get it by default.
#
# Every run has a time limit, and every process the script starts carries PARASTACK_BENCH_TAG in
# its environment (mpirun hands it to the ranks), so the cleanup kills exactly those.
#
# Usage: bench/progress.sh [options]   (each option also as the environment variable shown)
#   --build DIR             BUILD_DIR       build directory                          build
#   --runs N                RUNS            runs per (ranks, kind) with the library  20
#   --without-runs N        WITHOUT_RUNS    runs per (ranks, kind) without it        5
#   --ranks "A B"           RANKS           job sizes                                "8 16"
#   --kinds "K ..."         KINDS           fault kinds     "skip-collective deadlock-pair wrong-tag compute"
#   --fault-window LO-HI    FAULT_WINDOW    fault time after MPI_Init, seconds       3-15
#   --detect-timeout S      DETECT_TIMEOUT  seconds after the fault before a run counts missed  120
#   --seed N                SEED            the random choices                       random
#   --keep                  KEEP=1          keep the work directory (reports, logs)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
RUNS=${RUNS:-20}
WITHOUT_RUNS=${WITHOUT_RUNS:-5}
RANKS=${RANKS:-"8 16"}
KINDS=${KINDS:-"skip-collective deadlock-pair wrong-tag compute"}
FAULT_WINDOW=${FAULT_WINDOW:-3-15}
DETECT_TIMEOUT=${DETECT_TIMEOUT:-120}
SEED=${SEED:-}
KEEP=${KEEP:-0}

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD_DIR=$2 ;;
    --runs) RUNS=$2 ;;
    --without-runs) WITHOUT_RUNS=$2 ;;
    --ranks) RANKS=$2 ;;
    --kinds) KINDS=$2 ;;
    --fault-window) FAULT_WINDOW=$2 ;;
    --detect-timeout) DETECT_TIMEOUT=$2 ;;
    --seed) SEED=$2 ;;
    --keep) KEEP=1; shift; continue ;;
    *) usage ;;
  esac
  [ $# -ge 2 ] || usage
  shift 2
done

build=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory $BUILD_DIR" >&2; exit 1; }
bin=$build/monitor/parastack
program=$build/tests/programs/ps_progress
poller=$build/tests/programs/ps_poller
library=$build/mpi_progress/libparastack-progress.so
for f in "$bin" "$program" "$poller" "$library"; do
  [ -e "$f" ] || { echo "missing $f: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
[ -n "$SEED" ] || SEED=$(( $(date +%s) % 100000 ))
RANDOM=$SEED
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

work=$(mktemp -d /tmp/parastack-progress.XXXXXX)
tag=parastack-progress-$$-$SEED

# shellcheck source=bench/tagged_processes.sh
source bench/tagged_processes.sh  # (the script runs from the top of the tree)

# pick_time VAR LO-HI: VAR = a uniform random number in it (one decimal). Never called in $(...):
# bash 5.1+ reseeds RANDOM in a subshell, and --seed would not repeat.
pick_time() {
  local r=$RANDOM
  printf -v "$1" '%s' "$(awk -v lo="${2%-*}" -v hi="${2#*-}" -v r="$r" 'BEGIN {printf "%.1f", lo + (hi - lo) * r / 32767}')"
}
at=0  # the fault time pick_time draws

# verdict, hang type, LP ranks (library), LP ranks (stacks), source, delay: from a report.
read_report() {
  python3 - "$1" "$2" <<'EOF'
import json, os, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("none - - - - -")
    sys.exit()
lp = r.get("least_progressed") or {}
lib = (lp.get("mpi_progress") or {}).get("least_progressed")
stacks = []
for ranges in (lp.get("stacks") or {}).get("least_progressed") or []:
    for part in ranges.split(","):
        a, _, b = part.partition("-")
        stacks += range(int(a), int(b or a) + 1)
onset = os.stat(sys.argv[2]).st_mtime if os.path.exists(sys.argv[2]) else None  # the fault file's
delay = "%.1f" % (r["detected_at"] - onset) if onset and r.get("detected_at") else "-"
fmt = lambda v: ",".join(map(str, sorted(v))) if v else "-"
print(str(r.get("verdict", "-")).replace(" ", "_"), r.get("hang_type") or "-",
      fmt(lib) if lib is not None else "nolib", fmt(stacks), lp.get("source", "-"), delay)
EOF
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); seed $SEED; build $build"
rows=$work/rows
: >"$rows"
printf "\n| ranks | kind | library | faulty | fault s | verdict | type | delay s | LP (library) | LP (stacks) |\n|---:|---|---|---|---:|---|---|---:|---|---|\n"
run=0
for ranks in $RANKS; do
  for kind in $KINDS; do
    for ((i = 0; i < RUNS + WITHOUT_RUNS; ++i)); do
      run=$((run + 1))
      with=yes
      [ "$i" -ge "$RUNS" ] && with=no
      rank=$((RANDOM % ranks))
      pick_time at "$FAULT_WINDOW"
      truth=$rank
      [ "$kind" = deadlock-pair ] && truth=$(printf '%s\n' "$rank" "$(((rank + 1) % ranks))" | sort -n | paste -sd,)
      dir=$work/run$run
      mkdir -p "$dir/ready"
      options=(--report "$dir/report.json")
      [ "$with" = yes ] && options+=(--mpi-progress --mpi-progress-library "$library")
      limit=$(awk -v a="$at" -v d="$DETECT_TIMEOUT" 'BEGIN {printf "%d", a + d + 30}')
      job=("$program" --fault "$kind" --fault-rank "$rank" --fault-after "$at")
      [ "$kind" = poller-deadlock ] && job=("$poller" 600 --deadlock "$rank" "$at")
      status=0
      (cd "$dir" && PS_READY_DIR="$dir/ready" PARASTACK_BENCH_TAG="$tag.$run" exec timeout -k 30 "$limit" \
        "$bin" run "${options[@]}" -- mpirun --oversubscribe -np "$ranks" "${job[@]}") >"$dir/out" 2>"$dir/log" \
        </dev/null || status=$?
      kill_started "$run"
      read -r verdict type lib stacks _ delay < <(read_report "$dir/report.json" "$dir/ready/fault.$rank")
      [ -e "$dir/ready/fault.$rank" ] || verdict="no_fault"
      [ "$status" = 124 ] || [ "$status" = 137 ] && [ "$verdict" != hang ] && verdict=missed
      printf "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" "$ranks" "$kind" "$with" "$truth" "$at" \
        "$verdict" "$type" "$delay" "$lib" "$stacks"
      printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$ranks" "$kind" "$with" "$truth" "$verdict" "$lib" "$stacks" >>"$rows"
    done
  done
done

# Per (ranks, kind, library): hangs found; LP named exactly; a wrong rank named; nothing named.
echo
echo "| ranks | kind | library | hangs found | named (library) | wrong (library) | named (stacks) | wrong (stacks) | stacks named nobody |"
echo "|---:|---|---|---:|---:|---:|---:|---:|---:|"
awk -F '\t' '
  function wrong(named, truth,   n, parts, i, ok) {
    if (named == "-" || named == "nolib") return 0
    n = split(named, parts, ",")
    for (i = 1; i <= n; ++i) if (index("," truth ",", "," parts[i] ",") == 0) return 1
    return 0
  }
  {
    key = $1 "\t" $2 "\t" $3; if (!(key in runs)) order[++keys] = key
    runs[key]++; all[$3]++
    if ($5 != "hang") next
    found[key]++; allfound[$3]++
    if ($6 == $4) { lib[key]++; alllib[$3]++ }
    if (wrong($6, $4)) { libwrong[key]++; alllibwrong[$3]++ }
    if ($7 == $4) { st[key]++; allst[$3]++ }
    if (wrong($7, $4)) { stwrong[key]++; allstwrong[$3]++ }
    if ($7 == "-") { stnone[key]++; allstnone[$3]++ }
  }
  END {
    for (i = 1; i <= keys; ++i) {
      k = order[i]; split(k, f, "\t"); n = found[k] + 0
      printf "| %s | %s | %s | %d/%d | %s | %s | %d/%d | %d/%d | %d/%d |\n", f[1], f[2], f[3], n, runs[k],
        f[3] == "yes" ? lib[k] + 0 "/" n : "-", f[3] == "yes" ? libwrong[k] + 0 "/" n : "-",
        st[k] + 0, n, stwrong[k] + 0, n, stnone[k] + 0, n
    }
    for (w in all) {
      n = allfound[w] + 0
      printf "| **all** | | %s | %d/%d | %s | %s | %d/%d | %d/%d | %d/%d |\n", w, n, all[w],
        w == "yes" ? sprintf("%d/%d (%.1f%%)", alllib[w], n, n ? 100 * alllib[w] / n : 0) : "-",
        w == "yes" ? sprintf("%d/%d (%.1f%%)", alllibwrong[w], n, n ? 100 * alllibwrong[w] / n : 0) : "-",
        allst[w] + 0, n, allstwrong[w] + 0, n, allstnone[w] + 0, n
    }
  }' "$rows"
