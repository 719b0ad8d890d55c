#!/usr/bin/env bash
# The one-node watchdog's benchmark on real Open MPI jobs (not a test: it prints Markdown tables).
#
#  1. overhead: a fixed-work 4-rank stencil run twice at the same time (so machine noise hits both),
#     one under `parastack run`, one not; the slots swap every round. Prints the run-time ratio.
#  2. injected hangs in ps_solver (tests/programs/ps_solver.c, blocking style): jobs of each size in
#     SOLVER_RANKS, each fault kind in FAULT_KINDS (spin and sleep: a computation hang on one rank;
#     deadlock: that rank enters a receive nobody matches) on a random rank, fired by the injector
#     (tests/programs/fault_injector.c, preloaded into the ranks) a uniform random time in
#     SOLVER_FAULT_WINDOW seconds after the rank's first MPI call: from the first seconds of the
#     job, before any model could be built. SOLVER_RUNS runs per (ranks, kind).
#  3. injected hangs in real applications nobody here wrote: Debian's LAMMPS (`lmp`, the melt and
#     peptide examples of lammps-examples, copied and lengthened), Debian's `hpcc` (a small
#     hpccinf.txt written here) and, when asked (--apps cp2k:4), Debian's cp2k (bench/app_inputs.sh:
#     DFT molecular dynamics, deep Fortran stacks) or our hybrid MPI + OpenMP code (--apps openmp:2,
#     tests/programs/ps_openmp.c, 2 threads a rank, whose spin is its own bug: a parallel region
#     repeated for ever) or our mpi4py ring (--apps mpi4py:4, tests/programs/ps_ring.py, Debian's
#     python3: its faults are its own, in Python, and it also takes the kinds loop and loop-kernel, a
#     loop through Python helpers or an extension's kernel; the injector takes loop, a loop through
#     two C helpers, and loop-deep, whose helpers call kernels of their own), the same faults through LD_PRELOAD, at each time of
#     APP_FAULT_TIMES (a number, or LO-HI for a uniform random time). APP_RUNS runs per (program,
#     kind, time).
#     Per run of 2 and 3: ranks, kind, rank, fault time, verdict, hang type, faulty ranks, delay
#     (the report's detected_at minus the fault file's mtime, both Unix times); then per group and
#     overall: hangs detected, with the right type and rank, delay median and p95.
#     Verdicts: hang (detected after the fault), missed (no hang verdict within DETECT_TIMEOUT s of
#     the fault time, or the job ended first), false alarm (a hang verdict before the fault fired),
#     no fault (the job ended before the fault fired; not counted).
#  4. healthy runs of at least HEALTHY_MINUTES each: LAMMPS, the heat demo (tests/programs/heat.c
#     without --bug-rank), ps_poller (a code that never blocks in MPI) and hpcc (run again and
#     again until the time is up), and cp2k when asked; per run the parastack exit status and verdict, then
#     "false alarms: N in H healthy job-hours".
#  5. (only when asked: --sections stalls) healthy 4-rank ps_solver jobs whose random rank stands
#     still once, STALL_AT seconds after its first MPI call, for each of STALL_SECONDS: kind
#     `stall` sleeps outside MPI (a rank waiting on anything but MPI and the kernel), kind `kernel`
#     waits uninterruptibly in the kernel (state D, as on a stalled NFS or Lustre mount), kind
#     `serial` computes in one function (a serial phase on data it holds), kind `serial-fill` does
#     so while first-touching 16 MiB of new memory a second (a serial phase building arrays). Per run
#     the verdict (ran to completion, or killed as a hang); then per kind the longest stall the job
#     survived and the shortest that was taken for a hang. A healthy job that stands still for
#     longer than the detection time is a hang by this method (docs/statistics.md, Known limits);
#     one held in the kernel, or filling new memory, never is.
#
# Every program asked for (--apps, --healthy) must be one this machine can run: the script names
# those it cannot, and how to install them, and stops before the first run.
# Every run has a time limit (a missed hang cannot block the script), and every process the script
# starts carries PARASTACK_BENCH_TAG in its environment (mpirun hands it to the ranks), so the
# cleanup, after each run and on exit, kills exactly those, orphans included.
#
# Usage: bench/watchdog.sh [options]   (each option also as the environment variable shown)
#   --build DIR               BUILD_DIR            build directory                      build
#   --sections LIST           SECTIONS             which of overhead,solver,apps,healthy,stalls  the first four
#   --rounds N                ROUNDS               1: rounds (0 skips)                  3
#   --iterations N            ITERATIONS           1: stencil iterations                150000
#   --solver-runs N           SOLVER_RUNS          2: runs per (ranks, kind) (0 skips)  20
#   --solver-ranks "A B"      SOLVER_RANKS         2: job sizes                         "4 8"
#   --solver-fault-window L-H SOLVER_FAULT_WINDOW  2: fault time range, seconds         3-60
#   --kinds "K ..."           FAULT_KINDS          2, 3: fault kinds                    "spin sleep deadlock"
#   --app-runs N              APP_RUNS             3: runs per (program, kind, time) (0 skips)  1
#   --apps "P:R ..."          APPS                 3: program:ranks, program one of melt, peptide, hpcc,
#                                                  cp2k, openmp, mpi4py
#                                                  "melt:4 melt:8 peptide:4 peptide:8 hpcc:4"
#   --app-fault-times "T ..." APP_FAULT_TIMES      3: fault times, seconds (T or LO-HI)  "5 60-90"
#   --stall-kinds "K ..."     STALL_KINDS          5: stall, kernel, serial, serial-fill "stall kernel"
#   --stall-seconds "D ..."   STALL_SECONDS        5: how long each stall lasts          "1 2 3 4 5 8 15"
#   --stall-at S              STALL_AT             5: when, after the first MPI call     20
#   --healthy-minutes M       HEALTHY_MINUTES      4: minutes per healthy run (0 skips)  10
#   --healthy "P:R ..."       HEALTHY              4: program:ranks, program one of melt, peptide,
#                                                  heat, ps_poller, hpcc, cp2k, openmp, mpi4py
#                                                  "melt:4 peptide:4 heat:4 ps_poller:4 hpcc:4"
#   --detect-timeout S        DETECT_TIMEOUT       2, 3: seconds after the fault time before a run
#                                                  is ended and counted missed          300
#   --hpcc-n N                HPCC_N               hpcc's problem size (about 3 min at 6000 on
#                                                  2 cores, 4 ranks)                    6000
#   --seed N                  SEED                 the random choices (ranks, times)    random
#   --parastack-options "..." PARASTACK_OPTIONS    more options for `parastack run`, e.g.
#                                                  "--log-level debug" (each run keeps its log in
#                                                  the work directory while the script runs; runs
#                                                  start there, so give paths absolute)
#   --keep                    KEEP=1               keep the work directory (logs, reports) at the end
# A quick smoke run of the mechanics (a few minutes):
#   bench/watchdog.sh --rounds 1 --iterations 20000 --solver-runs 1 --solver-ranks 4 \
#     --solver-fault-window 3-10 --detect-timeout 60 --apps "melt:4 hpcc:4" --app-fault-times 5 \
#     --healthy-minutes 1 --hpcc-n 2000
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
SECTIONS=${SECTIONS:-overhead,solver,apps,healthy}
ROUNDS=${ROUNDS:-3}
ITERATIONS=${ITERATIONS:-150000}
SOLVER_RUNS=${SOLVER_RUNS:-20}
SOLVER_RANKS=${SOLVER_RANKS:-"4 8"}
SOLVER_FAULT_WINDOW=${SOLVER_FAULT_WINDOW:-3-60}
FAULT_KINDS=${FAULT_KINDS:-"spin sleep deadlock"}
APP_RUNS=${APP_RUNS:-1}
APPS=${APPS:-"melt:4 melt:8 peptide:4 peptide:8 hpcc:4"}
APP_FAULT_TIMES=${APP_FAULT_TIMES:-"5 60-90"}
HEALTHY_MINUTES=${HEALTHY_MINUTES:-10}
STALL_KINDS=${STALL_KINDS:-"stall kernel"}
STALL_SECONDS=${STALL_SECONDS:-"1 2 3 4 5 8 15"}
STALL_AT=${STALL_AT:-20}
HEALTHY=${HEALTHY:-"melt:4 peptide:4 heat:4 ps_poller:4 hpcc:4"}
DETECT_TIMEOUT=${DETECT_TIMEOUT:-300}
HPCC_N=${HPCC_N:-6000}
SEED=${SEED:-}
PARASTACK_OPTIONS=${PARASTACK_OPTIONS:-}
KEEP=${KEEP:-0}

usage() {
  sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD_DIR=$2 ;;
    --sections) SECTIONS=$2 ;;
    --rounds) ROUNDS=$2 ;;
    --iterations) ITERATIONS=$2 ;;
    --solver-runs) SOLVER_RUNS=$2 ;;
    --solver-ranks) SOLVER_RANKS=$2 ;;
    --solver-fault-window) SOLVER_FAULT_WINDOW=$2 ;;
    --kinds) FAULT_KINDS=$2 ;;
    --app-runs) APP_RUNS=$2 ;;
    --apps) APPS=$2 ;;
    --app-fault-times) APP_FAULT_TIMES=$2 ;;
    --healthy-minutes) HEALTHY_MINUTES=$2 ;;
    --stall-kinds) STALL_KINDS=$2 ;;
    --stall-seconds) STALL_SECONDS=$2 ;;
    --stall-at) STALL_AT=$2 ;;
    --healthy) HEALTHY=$2 ;;
    --detect-timeout) DETECT_TIMEOUT=$2 ;;
    --hpcc-n) HPCC_N=$2 ;;
    --seed) SEED=$2 ;;
    --parastack-options) PARASTACK_OPTIONS=$2 ;;
    --keep) KEEP=1; shift; continue ;;
    *) usage ;;
  esac
  [ $# -ge 2 ] || usage
  shift 2
done

section() { [[ ",$SECTIONS," == *",$1,"* ]]; }
build=$(cd "$BUILD_DIR" 2>/dev/null && pwd) || { echo "no build directory $BUILD_DIR" >&2; exit 1; }
bin=$build/monitor/parastack
programs=$build/tests/programs
injector=$programs/libps_fault.so
for f in "$bin" "$programs/ps_target" "$programs/ps_solver" "$programs/ps_poller" "$programs/heat" "$injector"; do
  [ -e "$f" ] || { echo "missing $f: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
[ -n "$SEED" ] || SEED=$(( $(date +%s) % 100000 ))
RANDOM=$SEED
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a parastack_options <<<"$PARASTACK_OPTIONS"

work=$(mktemp -d /tmp/parastack-bench.XXXXXX)
tag=parastack-bench-$$-$SEED

# shellcheck source=bench/tagged_processes.sh
source bench/tagged_processes.sh  # (the script runs from the top of the tree)
# shellcheck source=bench/app_inputs.sh
source bench/app_inputs.sh

# pick_time VAR SPEC: VAR = a uniform random number in SPEC "LO-HI" (one decimal), or SPEC itself.
# Never called in $(...): bash 5.1+ reseeds RANDOM in a subshell, and --seed would not repeat.
pick_time() {
  local r=$RANDOM
  case $2 in
    *-*) printf -v "$1" '%s' "$(awk -v lo="${2%-*}" -v hi="${2#*-}" -v r="$r" 'BEGIN {printf "%.1f", lo + (hi - lo) * r / 32767}')" ;;
    *) printf -v "$1" '%s' "$2" ;;
  esac
}
at=0  # the fault time pick_time draws

# The report's verdict, hang type, faulty ranks, detected_at; "none - - -" without a report.
read_report() {
  python3 - "$1" <<'EOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("none - - -")
    sys.exit()
print(str(r.get("verdict", "-")).replace(" ", "_"), r.get("hang_type") or "-",
      ",".join(map(str, r.get("faulty_ranks") or [])) or "-", r.get("detected_at") or "-")
EOF
}

# watch ID LIMIT DIR COMMAND...: `parastack run` on COMMAND in DIR, for LIMIT seconds at most, with
# PS_READY_DIR=DIR/ready (where the injector writes fault.RANK when it fires), the report in
# DIR/report.json, the command's output in DIR/out and parastack's log in DIR/log. Sets `status`
# (parastack's exit status, or "timeout") and `left` (processes left behind by a run that ended
# by itself), and kills whatever is left.
watch() {
  local id=$1 limit=$2 dir=$3
  shift 3
  mkdir -p "$dir/ready"
  status=0
  (cd "$dir" && PS_READY_DIR="$dir/ready" PARASTACK_BENCH_TAG="$tag.$id" exec timeout -k 30 "$limit" \
    "$bin" run ${parastack_options[@]+"${parastack_options[@]}"} --report "$dir/report.json" -- "$@") \
    >"$dir/out" 2>"$dir/log" </dev/null || status=$?
  left=0
  case $status in
    124 | 137) status=timeout ;;
    *) left=$(started_pids "$id" | wc -l) ;;
  esac
  kill_started "$id"
  # Options parastack refuses (a path relative to the caller's directory: runs start in DIR) would
  # refuse every run, and each would read as a fault that never fired.
  if [ "$status" = 2 ] && grep -q '^parastack run: ' "$dir/log"; then
    echo "parastack refused the run: $(grep -m1 '^parastack run: ' "$dir/log")" >&2
    exit 2
  fi
}

# A LAMMPS example (melt or peptide) in DIR, lengthened to SECONDS (lammps_input). Sets `job`, the
# command that runs it, with the remaining arguments (the fault's -x settings) given to mpirun.
lammps_job() {
  local name=$1 ranks=$2 dir=$3 seconds=$4
  shift 4
  lammps_input "$name" "$dir" "$seconds"
  job=(mpirun --oversubscribe -np "$ranks" "$@" lmp -in "in.$name" -log none)
}

# hpcc's input (the shipped example's, with problem size N and a P x Q grid of the ranks) in DIR.
hpcc_input() {
  local ranks=$1 dir=$2 p=1 q
  for ((q = 1; q * q <= ranks; ++q)); do (( ranks % q == 0 )) && p=$q; done
  q=$((ranks / p))
  cat >"$dir/hpccinf.txt" <<EOF
HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$HPCC_N         Ns
1            # of NBs
80           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$p            Ps
$q            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
EOF
}

available() {  # PROGRAM SECTION: whether this machine can run it in SECTION (says why not)
  case $1 in
    melt | peptide)
      command -v lmp >/dev/null || { echo "$1: lmp is not installed (apt-get install lammps)"; return 1; }
      [ -n "$lammps_examples" ] || { echo "$1: no LAMMPS examples (apt-get install lammps-examples)"; return 1; } ;;
    hpcc) command -v hpcc >/dev/null || { echo "hpcc: not installed (apt-get install hpcc)"; return 1; } ;;
    cp2k) command -v cp2k.psmp >/dev/null || { echo "cp2k: not installed (apt-get install cp2k)"; return 1; } ;;
    openmp) [ -x "$programs/ps_openmp" ] || { echo "openmp: $programs/ps_openmp is not built"; return 1; } ;;
    mpi4py)
      [ -r "$programs/ps_ring.py" ] || { echo "mpi4py: $programs/ps_ring.py is not in the build"; return 1; }
      /usr/bin/python3 -c 'import mpi4py' 2>/dev/null || { echo "mpi4py: not installed (apt-get install python3-mpi4py)"; return 1; } ;;
    heat | ps_poller) [ "$2" = healthy ] || { echo "$1: no fault runs of it (--apps takes melt, peptide, hpcc, cp2k, openmp, mpi4py)"; return 1; } ;;
    *) echo "$1: no such program (melt, peptide, hpcc, cp2k, openmp, mpi4py; and heat, ps_poller for --healthy)"; return 1 ;;
  esac
}

# Every program asked for must run here, checked before the first run: a benchmark of hours that
# left one out would print tables that look complete.
unavailable=()
if section apps && [ "$APP_RUNS" -gt 0 ]; then
  for app in $APPS; do reason=$(available "${app%:*}" apps) || unavailable+=("--apps ${app}: $reason"); done
fi
if section healthy && awk -v m="$HEALTHY_MINUTES" 'BEGIN {exit !(m > 0)}'; then
  for entry in $HEALTHY; do reason=$(available "${entry%:*}" healthy) || unavailable+=("--healthy ${entry}: $reason"); done
fi
if [ ${#unavailable[@]} -gt 0 ]; then
  for u in "${unavailable[@]}"; do echo "$0: cannot run $u" >&2; done
  echo "(packaging/bootstrap.sh bench installs what the benchmarks need; or leave the program out)" >&2
  exit 1
fi

# classify RANK DIR KIND: after a fault run, sets verdict, type, faulty, delay, fired (1 when the
# injector fired) and right (1 when the type, and for a computation hang the rank, are the
# injected ones).
classify() {
  local rank=$1 dir=$2 kind=$3 onset detected
  read -r verdict type faulty detected < <(read_report "$dir/report.json")
  onset=$(stat -c %.Y "$dir/ready/fault.$rank" 2>/dev/null || echo -)
  delay=-
  right=0
  fired=1
  [ "$onset" = - ] && fired=0
  if [ "$onset" = - ]; then
    [ "$verdict" = hang ] && verdict="false alarm" || verdict="no fault"
  elif [ "$verdict" = hang ]; then
    delay=$(awk -v d="$detected" -v o="$onset" 'BEGIN {printf "%.1f", d - o}')
    if awk -v d="$delay" 'BEGIN {exit !(d < 0)}'; then
      verdict="false alarm"
      delay=-
    elif [ "$kind" = deadlock ]; then
      [ "$type" = communication ] && right=1
    else
      [ "$type" = computation ] && [ "$faulty" = "$rank" ] && right=1
    fi
  else
    verdict=missed
  fi
}

# summarize "GROUP ..." < rows: per group and overall, from tab-separated rows (group, verdict,
# delay, right, fired): hangs detected, with the right type and rank, delay median and p95.
summarize() {
  printf "| group | detected | right type and rank | missed | false alarms | delay median s | delay p95 s | fault not fired |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|\n"
  sort -t $'\t' -k3,3g | awk -F '\t' -v order="$1" '
    function row(g, label,   n, m, p) {
      n = count[g] + 0
      m = n == 0 ? "-" : n % 2 ? sprintf("%.1f", v[g, (n + 1) / 2]) : sprintf("%.1f", (v[g, n / 2] + v[g, n / 2 + 1]) / 2)
      p = n == 0 ? "-" : sprintf("%.1f", v[g, int(0.95 * n + 0.999999)])
      printf "| %s | %d/%d | %d/%d | %d | %d | %s | %s | %d |\n", label, n, fired[g], right[g], fired[g], missed[g],
             false_alarms[g], m, p, unfired[g]
    }
    function add(g) {
      if ($2 == "false alarm") false_alarms[g]++
      if (!$5) { unfired[g]++; return }
      fired[g]++
      if ($2 == "hang") { v[g, ++count[g]] = $3; right[g] += $4 }
      if ($2 == "missed") missed[g]++
    }
    { add($1); add(" all") }
    END { n = split(order, groups, " "); for (i = 1; i <= n; ++i) row(groups[i], groups[i]); row(" all", "**all**") }'
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); seed $SEED; build $build"
[ -n "$PARASTACK_OPTIONS" ] && echo "parastack run options: $PARASTACK_OPTIONS"

if section overhead && [ "$ROUNDS" -gt 0 ]; then
  echo
  echo "== 1. overhead: 4-rank stencil, $ITERATIONS iterations, with and without parastack, at the same time"
  printf "| round | without s | with parastack s | ratio |\n|---:|---:|---:|---:|\n"
  ratios=()
  for round in $(seq 1 "$ROUNDS"); do
    plain=(mpirun --oversubscribe -np 4 "$programs/ps_target" healthy "$ITERATIONS")
    watched=("$bin" run --report "$work/overhead.json" -- "${plain[@]}")
    if (( round % 2 )); then
      PARASTACK_BENCH_TAG=$tag.overhead "${plain[@]}" >"$work/a" 2>&1 & a=$!
      PARASTACK_BENCH_TAG=$tag.overhead "${watched[@]}" >"$work/b" 2>"$work/b.log" & b=$!
    else
      PARASTACK_BENCH_TAG=$tag.overhead "${watched[@]}" >"$work/b" 2>"$work/b.log" & b=$!
      PARASTACK_BENCH_TAG=$tag.overhead "${plain[@]}" >"$work/a" 2>&1 & a=$!
    fi
    status_plain=0 status_watched=0
    wait "$a" || status_plain=$?
    wait "$b" || status_watched=$?
    kill_started overhead
    t_plain=$(awk '/elapsed/ {print $2}' "$work/a")
    t_watched=$(awk '/elapsed/ {print $2}' "$work/b")
    if [ -n "$t_plain" ] && [ -n "$t_watched" ]; then
      ratio=$(awk -v w="$t_watched" -v p="$t_plain" 'BEGIN {printf "%.3f", w / p}')
      ratios+=("$ratio")
    else
      # A run that did not finish: a watched one ended by a (false) hang verdict is worth showing.
      read -r verdict type faulty _ < <(read_report "$work/overhead.json")
      ratio="- (exit $status_plain without, $status_watched with parastack: verdict $verdict, type $type, faulty $faulty)"
    fi
    echo "| $round | ${t_plain:--} | ${t_watched:--} | $ratio |"
  done
  if [ ${#ratios[@]} -gt 0 ]; then
    echo "ratio median: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
  else
    echo "ratio median: - (no round finished)"
  fi
fi

if section solver && [ "$SOLVER_RUNS" -gt 0 ]; then
  echo
  echo "== 2. injected hangs in ps_solver: $SOLVER_RUNS run(s) per (ranks, kind), fault ${SOLVER_FAULT_WINDOW} s after the rank's first MPI call"
  printf "| run | ranks | kind | rank | fault s | verdict | exit | hang type | faulty | delay s |\n"
  printf "|---:|---:|---|---:|---:|---|---|---|---|---:|\n"
  : >"$work/solver.tsv"
  run=0
  for ranks in $SOLVER_RANKS; do
    for ((i = 0; i < SOLVER_RUNS; ++i)); do
      for kind in $FAULT_KINDS; do
        run=$((run + 1))
        rank=$((RANDOM % ranks))
        pick_time at "$SOLVER_FAULT_WINDOW"
        dir=$work/solver$run
        limit=$(awk -v t="$at" -v d="$DETECT_TIMEOUT" 'BEGIN {printf "%d", t + d + 30}')
        watch "solver$run" "$limit" "$dir" mpirun --oversubscribe -np "$ranks" -x LD_PRELOAD="$injector" \
          -x PS_FAULT_KIND="$kind" -x PS_FAULT_RANK="$rank" -x PS_FAULT_AFTER_SECONDS="$at" \
          "$programs/ps_solver" blocking 3600
        classify "$rank" "$dir" "$kind"
        note=""
        [ "$left" -gt 0 ] && note=" ($left processes left behind)"
        echo "| $run | $ranks | $kind | $rank | $at | $verdict$note | $status | $type | $faulty | $delay |"
        printf '%s\t%s\t%s\t%s\t%s\n' "ps_solver:$ranks" "$verdict" "$delay" "$right" "$fired" >>"$work/solver.tsv"
      done
    done
  done
  echo
  summarize "$(for r in $SOLVER_RANKS; do printf 'ps_solver:%s ' "$r"; done)" <"$work/solver.tsv"
fi

if section apps && [ "$APP_RUNS" -gt 0 ]; then
  echo
  echo "== 3. injected hangs in real applications: $APP_RUNS run(s) per (program, kind, fault time), faults at ${APP_FAULT_TIMES// /, } s"
  printf "| run | program | ranks | kind | rank | fault s | verdict | exit | hang type | faulty | delay s |\n"
  printf "|---:|---|---:|---|---:|---:|---|---|---|---|---:|\n"
  : >"$work/apps.tsv"
  groups=""
  run=0
  for app in $APPS; do
    program=${app%:*}
    ranks=${app#*:}
    groups+=" $program:$ranks"
    for ((i = 0; i < APP_RUNS; ++i)); do
      for when in $APP_FAULT_TIMES; do
        for kind in $FAULT_KINDS; do
          run=$((run + 1))
          rank=$((RANDOM % ranks))
          pick_time at "$when"
          dir=$work/app$run
          mkdir -p "$dir"
          limit=$(awk -v t="$at" -v d="$DETECT_TIMEOUT" 'BEGIN {printf "%d", t + d + 30}')
          fault=(-x LD_PRELOAD="$injector" -x PS_FAULT_KIND="$kind" -x PS_FAULT_RANK="$rank"
                 -x PS_FAULT_AFTER_SECONDS="$at")
          case $program in
            melt | peptide)
              lammps_job "$program" "$ranks" "$dir" "$((limit + 60))" "${fault[@]}" ;;
            hpcc)
              hpcc_input "$ranks" "$dir"
              job=(mpirun --oversubscribe -np "$ranks" "${fault[@]}" hpcc) ;;
            cp2k)
              cp2k_input "$dir" "$((limit + 60))"
              job=(mpirun --oversubscribe -np "$ranks" "${fault[@]}" -x OMP_NUM_THREADS=1 cp2k.psmp -i md.inp -o cp2k.out) ;;
            openmp)
              # A spin is its own bug, inside a parallel region (it writes fault.RANK as the injector
              # does); sleep and deadlock come from the injector.
              [ "$kind" = spin ] && fault=()
              job=(mpirun --oversubscribe -np "$ranks" "${fault[@]}" -x OMP_NUM_THREADS=2 "$programs/ps_openmp"
                   "$((limit + 60))")
              [ "$kind" = spin ] && job+=(--bug-rank "$rank" --bug-after "$at") ;;
            mpi4py)
              # Every fault is its own (the ring's spin, sleep and deadlock modes, in Python).
              job=(mpirun --oversubscribe -np "$ranks" /usr/bin/python3 "$programs/ps_ring.py" "$kind" "$at" "$rank") ;;
            *) echo "unknown program $program" >&2; exit 2 ;;
          esac
          watch "app$run" "$limit" "$dir" "${job[@]}"
          classify "$rank" "$dir" "$kind"
          note=""
          [ "$left" -gt 0 ] && note=" ($left processes left behind)"
          echo "| $run | $program | $ranks | $kind | $rank | $at | $verdict$note | $status | $type | $faulty | $delay |"
          printf '%s\t%s\t%s\t%s\t%s\n' "$program:$ranks" "$verdict" "$delay" "$right" "$fired" >>"$work/apps.tsv"
        done
      done
    done
  done
  echo
  summarize "$groups" <"$work/apps.tsv"
fi

if section healthy && awk -v m="$HEALTHY_MINUTES" 'BEGIN {exit !(m > 0)}'; then
  seconds=$(awk -v m="$HEALTHY_MINUTES" 'BEGIN {printf "%d", m * 60}')
  echo
  echo "== 4. healthy runs of $HEALTHY_MINUTES minute(s) each, default settings"
  printf "| program | ranks | minutes | parastack exit | verdict |\n|---|---:|---:|---:|---|\n"
  false_alarms=0
  job_seconds=0
  run=0
  for entry in $HEALTHY; do
    program=${entry%:*}
    ranks=${entry#*:}
    run=$((run + 1))
    dir=$work/healthy$run
    mkdir -p "$dir"
    case $program in
      melt | peptide) lammps_job "$program" "$ranks" "$dir" "$seconds" ;;
      heat) job=(mpirun --oversubscribe -np "$ranks" "$programs/heat" "$seconds") ;;
      cp2k)
        cp2k_input "$dir" "$seconds"
        job=(mpirun --oversubscribe -np "$ranks" -x OMP_NUM_THREADS=1 cp2k.psmp -i md.inp -o cp2k.out) ;;
      ps_poller) job=(mpirun --oversubscribe -np "$ranks" "$programs/ps_poller" "$seconds") ;;
      openmp) job=(mpirun --oversubscribe -np "$ranks" -x OMP_NUM_THREADS=2 "$programs/ps_openmp" "$seconds") ;;
      mpi4py) job=(mpirun --oversubscribe -np "$ranks" /usr/bin/python3 "$programs/ps_ring.py" healthy "$seconds") ;;
      # hpcc runs a few minutes: again and again, one MPI program after another, until the time is up.
      hpcc)
        hpcc_input "$ranks" "$dir"
        job=(sh -c "end=\$((\$(date +%s) + $seconds)); while [ \$(date +%s) -lt \$end ]; do
                      mpirun --oversubscribe -np $ranks hpcc || exit \$?; done") ;;
      *) echo "unknown program $program" >&2; exit 2 ;;
    esac
    begin=$(date +%s.%N)
    # Long enough for the last hpcc round that began before the time was up.
    watch "healthy$run" "$((seconds + 900))" "$dir" "${job[@]}"
    elapsed=$(awk -v b="$begin" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - b}')
    job_seconds=$(awk -v a="$job_seconds" -v b="$elapsed" 'BEGIN {print a + b}')
    read -r verdict type faulty _ < <(read_report "$dir/report.json")
    case $verdict in
      completed) verdict="no hang" ;;
      hang) verdict="FALSE ALARM: $type, faulty ${faulty}"; false_alarms=$((false_alarms + 1)) ;;
      *) [ "$status" = timeout ] && verdict="did not end in time (no verdict)" ;;
    esac
    [ "$left" -gt 0 ] && verdict+=" ($left processes left behind)"
    echo "| $program | $ranks | $(awk -v s="$elapsed" 'BEGIN {printf "%.1f", s / 60}') | $status | $verdict |"
  done
  echo
  echo "false alarms: $false_alarms in $(awk -v s="$job_seconds" 'BEGIN {printf "%.2f", s / 3600}') healthy job-hours"
fi

if section stalls; then
  echo
  echo "== 5. healthy 4-rank ps_solver jobs, one rank standing still once, ${STALL_AT} s after its first MPI call"
  printf "| kind | stall s | rank | parastack exit | verdict |\n|---|---:|---:|---:|---|\n"
  : >"$work/stalls.tsv"
  run=0
  for kind in $STALL_KINDS; do
    for stall in $STALL_SECONDS; do
      run=$((run + 1))
      rank=$((RANDOM % 4))
      dir=$work/stall$run
      seconds=$(awk -v a="$STALL_AT" -v d="$stall" 'BEGIN {printf "%d", a + d + 20}')
      touch_mib=0
      [ "$kind" = serial-fill ] && touch_mib=16
      watch "stall$run" "$((seconds + 120))" "$dir" mpirun --oversubscribe -np 4 -x LD_PRELOAD="$injector" \
        -x PS_FAULT_KIND="${kind%-fill}" -x PS_FAULT_RANK="$rank" -x PS_FAULT_AFTER_SECONDS="$STALL_AT" \
        -x PS_FAULT_STALL_SECONDS="$stall" -x PS_FAULT_TOUCH_MIB="$touch_mib" "$programs/ps_solver" blocking "$seconds"
      read -r verdict type faulty _ < <(read_report "$dir/report.json")
      came_through=0
      case $verdict in
        completed) verdict="ran to completion"; came_through=1 ;;
        hang) verdict="killed as a hang: $type, faulty ${faulty}" ;;
        *) [ "$status" = timeout ] && verdict="did not end in time (no verdict)" ;;
      esac
      [ -e "$dir/ready/fault.$rank" ] || verdict+=" (the stall never fired)"
      [ "$left" -gt 0 ] && verdict+=" ($left processes left behind)"
      echo "| $kind | $stall | $rank | $status | $verdict |"
      printf '%s\t%s\t%s\n' "$kind" "$stall" "$came_through" >>"$work/stalls.tsv"
    done
  done
  echo
  awk -F'\t' '{ if ($3 == 1) { if (!($1 in ok) || $2 + 0 > ok[$1]) ok[$1] = $2 + 0 }
                 else { if (!($1 in bad) || $2 + 0 < bad[$1]) bad[$1] = $2 + 0 }; kinds[$1] = 1 }
       END { for (k in kinds) printf "%s: longest stall survived %s s, shortest taken for a hang %s\n", k,
             (k in ok) ? ok[k] : "none", (k in bad) ? bad[k] " s" : "none" }' "$work/stalls.tsv"
fi
