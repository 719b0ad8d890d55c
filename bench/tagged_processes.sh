# shellcheck shell=bash disable=SC2154,SC2120
# Sourced by the benchmark scripts that start MPI jobs (watchdog.sh, progress.sh,
# progress-overhead.sh): every process a script starts carries PARASTACK_BENCH_TAG=$tag.ID in its
# environment (mpirun hands it to the ranks), so the cleanup kills exactly those, orphans
# included. The caller sets `tag`, `work` and `KEEP`; sourcing installs the cleanup on exit.

# The processes of run ID (every run without an ID): those whose environment carries its tag. The
# script itself does not carry it, so it never finds itself.
started_pids() {
  local pattern="PARASTACK_BENCH_TAG=$tag\.${1:-.*}" environ pid
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    grep -qzx -- "$pattern" "$environ" 2>/dev/null && echo "$pid"
  done
  return 0
}
kill_started() {
  local pids
  for _ in 1 2 3 4 5; do
    pids=$(started_pids "$@")
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.2
  done
}
cleanup() {
  kill_started
  if [ "$KEEP" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
