#!/usr/bin/env bash
# The never-harm fault campaign (not a test: it prints a Markdown table). Healthy 4-rank Open MPI
# jobs (tests/programs/ps_solver, blocking style) run while parastack's monitors are killed,
# stopped and starved around them; after every trial every rank is checked:
#   - not left stopped: not in a trace stop ('t') and not traced (TracerPid 0), and it runs on
#     (its CPU time grows within 5 s);
#   - the job itself is not harmed: it ends with status 0 and its own output line, whatever
#     happened to the monitors beside it.
#
# Trials:
#  1. sampler   the sampling loop (parastack-bench sample-bench --loop: parastack's StackSampler
#               sampling every rank back to back, so a signal lands mid-sample or within
#               microseconds of one) killed with SIGKILL, SIGTERM, or SIGSTOP then SIGCONT then
#               SIGKILL, at a uniform random moment 1-40 ms after it started. SAMPLER_TRIALS.
#  2. monitor   parastack-monitor (the product, under its own mpirun, --pid of the job's mpirun)
#               killed the same three ways at a random moment 0.3-6 s after it started (discovery,
#               model building, sampling). MONITOR_TRIALS. After SIGTERM its log must say so.
#  3. run       `parastack run -- JOB` killed the same three ways 0.3-6 s after it started; the job
#               (its child) must still end with status 0 and its output. RUN_TRIALS.
#  4. report    a hang found while the report directory is unwritable (a read-only tmpfs: root
#               writes through file modes) or full (a 16 KiB tmpfs, filled):
#               parastack must still act (exit 3, the job killed), say why in its log, and leave
#               no file behind. REPORT_TRIALS each.
#  5. hosts     an 8-rank job over two emulated hosts (their own network, hostname and /proc; Open
#               MPI over ssh and TCP) with one parastack-monitor per host: the leader (node1) or the
#               follower (node2) killed the same three ways 0.3-6 s after the monitors started;
#               also no monitor may outlive its mpirun (bench/tools/faults_hosts.cc). HOSTS_TRIALS.
#  6. spawn     ranks that fork and exec a program after every iteration (PS_SOLVER_SPAWN): the
#               sampling loop killed mid-sample beside them as in 1, and `parastack run` watching
#               such a job to its end, which must be called completed. SPAWN_TRIALS each.
#  7. debugger  gdb attaches to a random rank 3-15 s into a watched job and holds it stopped for
#               5-25 s (far longer than a hang takes to find), then detaches: the job must complete
#               and parastack must not call it hung (it says a debugger holds the rank).
#               DEBUGGER_TRIALS.
#
# Usage: bench/faults.sh [--build DIR] [--sampler N] [--monitor N] [--run N] [--report N]
#        [--hosts N] [--spawn N] [--debugger N] [--seed S]
#        (defaults: build, 1000, 60, 30, 3, 24, 10, 10; as environment variables BUILD_DIR,
#        SAMPLER_TRIALS, MONITOR_TRIALS, RUN_TRIALS, REPORT_TRIALS, HOSTS_TRIALS, SPAWN_TRIALS,
#        DEBUGGER_TRIALS, SEED). Root, for the tmpfs of section 4 and the hosts of section 5.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUILD_DIR=${BUILD_DIR:-build}
SAMPLER_TRIALS=${SAMPLER_TRIALS:-1000}
MONITOR_TRIALS=${MONITOR_TRIALS:-60}
RUN_TRIALS=${RUN_TRIALS:-30}
REPORT_TRIALS=${REPORT_TRIALS:-3}
HOSTS_TRIALS=${HOSTS_TRIALS:-24}
SPAWN_TRIALS=${SPAWN_TRIALS:-10}
DEBUGGER_TRIALS=${DEBUGGER_TRIALS:-10}
SEED=${SEED:-1}
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD_DIR=$2; shift 2 ;;
    --sampler) SAMPLER_TRIALS=$2; shift 2 ;;
    --monitor) MONITOR_TRIALS=$2; shift 2 ;;
    --run) RUN_TRIALS=$2; shift 2 ;;
    --report) REPORT_TRIALS=$2; shift 2 ;;
    --hosts) HOSTS_TRIALS=$2; shift 2 ;;
    --spawn) SPAWN_TRIALS=$2; shift 2 ;;
    --debugger) DEBUGGER_TRIALS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--sampler N] [--monitor N] [--run N] [--report N] [--hosts N] [--spawn N]" \
            "[--debugger N] [--seed S]" >&2; exit 2 ;;
  esac
done
RANDOM=$SEED

PARASTACK=$BUILD_DIR/monitor/parastack
MONITOR=$BUILD_DIR/monitor/parastack-monitor
BENCH=$BUILD_DIR/bench/parastack-bench
SOLVER=$BUILD_DIR/tests/programs/ps_solver
FAULT_LIB=$BUILD_DIR/tests/programs/libps_fault.so
HOSTS_TOOL=$BUILD_DIR/bench/parastack-faults-hosts
for f in "$PARASTACK" "$MONITOR" "$BENCH" "$SOLVER" "$HOSTS_TOOL"; do
  [ -x "$f" ] || { echo "error: $f missing or not executable: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
done
[ -f "$FAULT_LIB" ] || { echo "error: $FAULT_LIB missing: build first (cmake --build $BUILD_DIR)" >&2; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
# Every process this script starts carries the tag (mpirun hands it to the ranks): the cleanup
# kills exactly those, orphans included.
export PARASTACK_FAULTS_TAG="faults-$$"
SCRATCH=$(mktemp -d /tmp/parastack-faults-XXXXXX)
cleanup() {
  local pid
  for pid in $(grep -l "PARASTACK_FAULTS_TAG=$PARASTACK_FAULTS_TAG" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do
    [ "$pid" != "$$" ] && kill -KILL "$pid" 2>/dev/null
  done
  local dir
  for dir in "$SCRATCH/full" "$SCRATCH/unwritable"; do mountpoint -q "$dir" 2>/dev/null && umount "$dir"; done
  rm -rf "$SCRATCH"
}
trap cleanup EXIT

# random_between VAR LO HI: VAR = a uniform random integer in [LO, HI]. Never called in $(...):
# bash 5.1+ reseeds RANDOM in a subshell, and --seed would not repeat.
random_between() { printf -v "$1" '%d' $(( $2 + (RANDOM * 32768 + RANDOM) % ($3 - $2 + 1) )); }
ms=0  # the milliseconds random_between draws for sleep_ms
sleep_ms() { sleep "$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')"; }

# The ranks (ps_solver processes) under launcher $1.
ranks_of() {
  local launcher=$1 pid
  for pid in $(pgrep -f "^$SOLVER "); do
    local p=$pid
    while [ "$p" -gt 1 ]; do
      p=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null | head -1)
      [ -z "$p" ] && break
      if [ "$p" = "$launcher" ]; then echo "$pid"; break; fi
    done
  done
}

cpu_ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$1/stat" 2>/dev/null; }

# Every rank of launcher $1: not trace-stopped, not traced, running. Prints a problem per rank.
check_ranks() {
  local launcher=$1 pid state tracer before after deadline
  for pid in $(ranks_of "$launcher"); do
    state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
    tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
    [ -z "$state" ] && continue  # the job ended meanwhile
    [ "$state" = "t" ] && echo "rank pid $pid left in a trace stop"
    [ -n "$tracer" ] && [ "$tracer" != 0 ] && echo "rank pid $pid still traced by $tracer"
    before=$(cpu_ticks "$pid")
    deadline=$((SECONDS + 5))
    while :; do
      after=$(cpu_ticks "$pid")
      [ -z "$after" ] && break
      [ "$after" -gt "$before" ] && break
      if [ $SECONDS -ge $deadline ]; then echo "rank pid $pid did not run for 5 s"; break; fi
      sleep 0.01
    done
  done
}

# A healthy job in the background: mpirun of 4 ps_solver ranks for $1 seconds (more mpirun
# options before the program: $2...); sets JOB_PID and JOB_OUT. job_ok checks its status and
# output once it has ended.
start_job() {
  local seconds=$1
  shift
  JOB_OUT=$SCRATCH/job.$RANDOM.out
  mpirun --oversubscribe -np 4 "$@" "$SOLVER" blocking "$seconds" > "$JOB_OUT" 2>&1 &
  JOB_PID=$!
  local deadline=$((SECONDS + 60))
  while [ "$(ranks_of "$JOB_PID" | wc -l)" -lt 4 ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
}
# A rank's fork, before it execs, is a ps_solver too: a job has its ranks while it has 4 or more.
job_running() { [ "$(ranks_of "$JOB_PID" | wc -l)" -ge 4 ]; }
# Not in $(...): a subshell cannot wait for this shell's job. Sets JOB_PROBLEMS.
job_ok() {
  local status=0
  JOB_PROBLEMS=""
  wait "$JOB_PID" || status=$?
  if [ $status -ne 0 ]; then
    JOB_PROBLEMS="job exited with status $status"
  elif ! grep -q "^iterations " "$JOB_OUT"; then
    JOB_PROBLEMS="job output lost its line: $(head -c 200 "$JOB_OUT")"
  fi
}

declare -A trials harmed
record() {  # section, signal way, problems (empty: none)
  local key="$1|$2"
  trials[$key]=$(( ${trials[$key]:-0} + 1 ))
  if [ -n "$3" ]; then
    harmed[$key]=$(( ${harmed[$key]:-0} + 1 ))
    echo "  $1 / $2: $3" | head -5 >&2
  fi
}

# Signals process $1 the way $2 says (kill, term, stop-cont-kill) and reaps it.
hit() {
  local pid=$1 way=$2
  case $way in
    kill) kill -KILL "$pid" 2>/dev/null ;;
    term) kill -TERM "$pid" 2>/dev/null ;;
    stop-cont-kill)
      kill -STOP "$pid" 2>/dev/null
      random_between ms 1 30
      sleep_ms "$ms"
      kill -CONT "$pid" 2>/dev/null
      random_between ms 1 30
      sleep_ms "$ms"
      kill -KILL "$pid" 2>/dev/null ;;
  esac
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.01; done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
ways=(kill term stop-cont-kill)

# Section $1 (sampler, spawn): $3 trials of the sampling loop killed mid-sample, each recorded as
# fault $2WAY; more mpirun options for the job: $4...
sampler_trials() {
  local section=$1 prefix=$2 count=$3 done_trials=0
  shift 3
  while [ $done_trials -lt "$count" ]; do
    start_job 40 "$@"
    while [ $done_trials -lt "$count" ] && job_running; do
      way=${ways[$((done_trials % 3))]}
      "$BENCH" sample-bench --pid "$JOB_PID" --loop 0.0001 > /dev/null 2>&1 &
      sampler=$!
      random_between ms 1 40
      sleep_ms "$ms"
      hit "$sampler" "$way"
      record "$section" "$prefix$way" "$(check_ranks "$JOB_PID")"
      done_trials=$((done_trials + 1))
    done
    job_ok
    record "$section" job "$JOB_PROBLEMS"
  done
}

echo "== 1. the sampling loop killed mid-sample: $SAMPLER_TRIALS trials" >&2
sampler_trials sampler "" "$SAMPLER_TRIALS"

echo "== 2. parastack-monitor killed while it watches: $MONITOR_TRIALS trials" >&2
done_trials=0
while [ $done_trials -lt "$MONITOR_TRIALS" ]; do
  start_job 60
  while [ $done_trials -lt "$MONITOR_TRIALS" ] && job_running; do
    way=${ways[$((done_trials % 3))]}
    log=$SCRATCH/monitor.$done_trials.log
    # A session directory of its own, as docs/user-guide.md says for monitors started beside a job.
    OMPI_MCA_orte_top_session_dir=$SCRATCH/monitor-session.$done_trials \
      mpirun --oversubscribe -np 1 "$MONITOR" --pid "$JOB_PID" --report "$SCRATCH/m.$done_trials.json" \
      --log-file "$log" > /dev/null 2>&1 &
    launcher=$!
    random_between ms 300 6000
    sleep_ms "$ms"
    monitor=$(pgrep -P "$launcher" -f parastack-monitor | head -1)
    [ -z "$monitor" ] && monitor=$(pgrep -f "$MONITOR --pid $JOB_PID" | head -1)
    problems=""
    if [ -n "$monitor" ]; then
      hit "$monitor" "$way"
      if [ "$way" = term ] && ! grep -q "asked to stop" "$log" 2>/dev/null; then
        problems="no line in the log after SIGTERM"
      fi
    fi
    hit "$launcher" kill
    problems+=$(check_ranks "$JOB_PID")
    leftovers=$(find "$SCRATCH" -maxdepth 1 -name '*.tmp.*' | wc -l)
    [ "$leftovers" -gt 0 ] && problems+=" $leftovers temporary file(s) left"
    record monitor "$way" "$problems"
    done_trials=$((done_trials + 1))
  done
  job_ok
  record monitor job "$JOB_PROBLEMS"
done

echo "== 3. parastack run killed while it watches its job: $RUN_TRIALS trials" >&2
for ((t = 0; t < RUN_TRIALS; t++)); do
  way=${ways[$((t % 3))]}
  dir=$SCRATCH/run.$t
  mkdir -p "$dir"
  # The job records its own exit status: once parastack run is gone, nobody else can.
  "$PARASTACK" run --report "$dir/report.json" --log-file "$dir/log" -- \
    sh -c "mpirun --oversubscribe -np 4 $SOLVER blocking 10 > $dir/out 2>&1; echo \$? > $dir/status" &
  watcher=$!
  random_between ms 300 6000
  sleep_ms "$ms"
  job=$(pgrep -P "$watcher" -x sh | head -1)
  launcher=$(pgrep -P "${job:-0}" -x mpirun | head -1)
  hit "$watcher" "$way"
  problems=""
  [ -n "$launcher" ] && problems=$(check_ranks "$launcher")
  # SIGTERM to parastack run is meant for the job (it passes it on, as a launcher does): the job
  # ends without a status of its own, and only the ranks' state is checked.
  deadline=$((SECONDS + 60))
  while [ "$way" != term ] && [ ! -s "$dir/status" ] && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  if [ "$way" = term ]; then
    :
  elif [ "$(cat "$dir/status" 2>/dev/null)" != 0 ]; then
    problems+=" job status $(cat "$dir/status" 2>/dev/null || echo none)"
  elif ! grep -q "^iterations " "$dir/out"; then
    problems+=" job output lost its line"
  fi
  record run "$way" "$problems"
done

echo "== 4. the report cannot be written: $REPORT_TRIALS trials each" >&2
report_trial() {  # kind: unwritable | full
  local kind=$1 dir=$SCRATCH/$1 status=0
  mkdir -p "$dir"
  # Root writes through file modes: a read-only mount is unwritable even for root.
  if [ "$kind" = full ]; then
    mount -t tmpfs -o size=16k tmpfs "$dir" || { echo "cannot mount a tmpfs (root?)"; return; }
    head -c 16k /dev/zero > "$dir/filler" 2>/dev/null
  else
    mount -t tmpfs -o ro,size=16k tmpfs "$dir" || { echo "cannot mount a tmpfs (root?)"; return; }
  fi
  local log=$SCRATCH/report-$kind.log
  timeout 300 "$PARASTACK" run --report "$dir/report.json" --log-file "$log" -- \
    mpirun --oversubscribe -np 4 -x LD_PRELOAD="$FAULT_LIB" -x PS_FAULT_KIND=spin -x PS_FAULT_RANK=1 \
    -x PS_FAULT_AFTER_SECONDS=3 "$SOLVER" blocking 120 > /dev/null 2>&1 || status=$?
  [ $status -eq 3 ] || echo "parastack exit status $status, not 3 (hang found, job killed)"
  grep -q "the report could not be written" "$log" || echo "no line in the log about the report"
  [ -z "$(find "$dir" -mindepth 1 -maxdepth 1 ! -name filler)" ] || echo "files left: $(ls "$dir" | tr '\n' ' ')"
  pgrep -f "^$SOLVER " > /dev/null && echo "ranks left running"
  umount "$dir"
}
for ((t = 0; t < REPORT_TRIALS; t++)); do
  record report unwritable "$(report_trial unwritable)"
  record report full "$(report_trial full)"
done

echo "== 5. monitors of a 2-host job killed: $HOSTS_TRIALS trials" >&2
if [ "$HOSTS_TRIALS" -gt 0 ]; then
  # Its processes are not this script's children: the tag finds them for the cleanup.
  while read -r word section fault problems; do
    case $word in
      TRIAL) [ "$problems" = OK ] && problems=""; record "$section" "$fault" "$problems" ;;
      SKIP) record hosts skipped "$section $fault $problems" ;;
      END) [ "$section" = 0 ] || [ "$section" = 77 ] || record hosts tool "parastack-faults-hosts exited $section" ;;
    esac
  done < <("$HOSTS_TOOL" --trials "$HOSTS_TRIALS" --seed "$SEED" --monitor "$MONITOR" 2>"$SCRATCH/hosts.err"; \
           echo "END $?")
  grep -q . "$SCRATCH/hosts.err" && tail -5 "$SCRATCH/hosts.err" >&2
fi

# `parastack run` watches a healthy 4-rank job to its end (more mpirun options: $3...); section
# $1, fault $2. The job must end with status 0 and its line, parastack with 0 and a report that
# says completed, and no rank may be left stopped or traced.
watched_healthy_run() {
  local section=$1 fault=$2 dir=$SCRATCH/$1.$RANDOM status=0 problems=""
  shift 2
  mkdir -p "$dir"
  "$PARASTACK" run --report "$dir/report.json" --log-file "$dir/log" -- \
    mpirun --oversubscribe -np 4 "$@" "$SOLVER" blocking 30 > "$dir/out" 2>&1 &
  WATCHER=$!
  WATCH_DIR=$dir
  [ -n "${DURING:-}" ] && "$DURING"
  wait "$WATCHER" || status=$?
  [ $status -eq 0 ] || problems+="parastack exit status $status, not 0 ($(grep -m1 -E 'HANG|error' "$dir/log")); "
  grep -q '"verdict": *"completed"' "$dir/report.json" 2>/dev/null || problems+="report does not say completed; "
  grep -q "^iterations " "$dir/out" || problems+="job output lost its line; "
  pgrep -f "^$SOLVER " > /dev/null && problems+="ranks left running; "
  record "$section" "$fault" "$problems"
}

echo "== 6. ranks that fork and exec while sampled: $SPAWN_TRIALS trials each" >&2
if [ "$SPAWN_TRIALS" -gt 0 ]; then
  sampler_trials spawn sampler- "$SPAWN_TRIALS" -x PS_SOLVER_SPAWN=/bin/true
  for ((t = 0; t < SPAWN_TRIALS; t++)); do
    watched_healthy_run spawn run-completes -x PS_SOLVER_SPAWN=/bin/true
  done
fi

echo "== 7. a debugger holds a rank of a watched job: $DEBUGGER_TRIALS trials" >&2
hold_a_rank() {  # DURING watched_healthy_run: gdb holds a random rank, then lets it go
  local deadline=$((SECONDS + 60)) launcher="" ranks rank hold
  while [ -z "$launcher" ] && [ $SECONDS -lt $deadline ]; do
    launcher=$(pgrep -P "$WATCHER" -x mpirun | head -1)
    sleep 0.05
  done
  random_between ms 3000 15000
  sleep_ms "$ms"
  mapfile -t ranks < <(ranks_of "$launcher")
  [ ${#ranks[@]} -gt 0 ] || return 0
  rank=${ranks[$((RANDOM % ${#ranks[@]}))]}
  random_between hold 5 25
  # The sampler may hold the rank for microseconds: gdb's attach then fails and is tried again.
  for attempt in 1 2 3 4 5; do
    gdb -p "$rank" -batch -ex "shell sleep $hold" -ex detach > "$WATCH_DIR/gdb.$attempt" 2>&1 || true
    grep -q "ptrace: Operation not permitted" "$WATCH_DIR/gdb.$attempt" || break
  done
  echo "rank pid $rank held ${hold} s" >> "$WATCH_DIR/held"
}
if [ "$DEBUGGER_TRIALS" -gt 0 ]; then
  command -v gdb > /dev/null || { echo "gdb missing (packaging/bootstrap.sh installs it)" >&2; exit 1; }
  for ((t = 0; t < DEBUGGER_TRIALS; t++)); do
    DURING=hold_a_rank watched_healthy_run debugger hold-5-25s
  done
fi

echo
echo "| section | fault | trials | ranks left stopped or traced, jobs harmed, or checks failed |"
echo "|---|---|---:|---:|"
total=0
total_harmed=0
for key in $(printf '%s\n' "${!trials[@]}" | sort); do
  echo "| ${key%%|*} | ${key#*|} | ${trials[$key]} | ${harmed[$key]:-0} |"
  total=$((total + trials[$key]))
  total_harmed=$((total_harmed + ${harmed[$key]:-0}))
done
echo "| **all** | | $total | $total_harmed |"
[ "$total_harmed" -eq 0 ]
