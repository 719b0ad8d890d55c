#!/usr/bin/env bash
# What watching costs the node in monitor CPU, on real applications whose stacks run deep through
# many libraries (the unwinder reads every frame's unwind rules from the rank's files): each
# program runs 4 ranks for SECONDS under `parastack run` with the default settings, and the
# monitor's CPU (utime + stime of `parastack run`, which does the sampling) is read over the
# middle of the run, after the first 10 s. Also printed: the samples it took (observations x 4)
# and the application's own progress in the same run (LAMMPS steps, cp2k MD steps), which the
# monitor's CPU takes from on a node with fewer cores than ranks.
# Usage: bench/monitor-cpu.sh [SECONDS (default 60)] [PARASTACK (default build/monitor/parastack)]
#   Programs: LAMMPS melt (Debian's lammps and lammps-examples), cp2k (Debian's cp2k), each
#   skipped with a note when not installed. Give another build's parastack to compare two versions.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
bin=$(realpath "${2:-build/monitor/parastack}")
[ -x "$bin" ] || { echo "build first: packaging/bootstrap.sh bench" >&2; exit 1; }
[ "$seconds" -ge 30 ] || { echo "SECONDS must be at least 30" >&2; exit 2; }
export OMPI_MCA_mpi_yield_when_idle=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
work=$(mktemp -d /tmp/parastack-monitor-cpu.XXXXXX)
watcher=""
cleanup() {
  if [ -n "$watcher" ]; then kill "$watcher" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=bench/app_inputs.sh
source bench/app_inputs.sh  # (the script runs from the top of the tree)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo ""; }

echo "== monitor CPU on real applications, 4 ranks, $seconds s each ($bin)"
printf "| program | monitor CPU %% of a core | samples per s (observations x 4) | monitor CPU per sample us | application progress in %s s (verdict) |\n" "$seconds"
printf "|---|---:|---:|---:|---|\n"
for program in melt cp2k; do
  dir=$work/$program
  mkdir -p "$dir"
  case $program in
    melt)
      if [ -z "$lammps_examples" ] || ! command -v lmp >/dev/null; then
        echo "| melt | not installed (apt-get install lammps lammps-examples) | | | |"; continue
      fi
      lammps_input melt "$dir" "$seconds"
      job=(mpirun --oversubscribe -np 4 lmp -in in.melt -log app.log) ;;
    cp2k)
      if ! command -v cp2k.psmp >/dev/null; then
        echo "| cp2k | not installed (apt-get install cp2k) | | | |"; continue
      fi
      cp2k_input "$dir" "$seconds"
      job=(mpirun --oversubscribe -np 4 -x OMP_NUM_THREADS=1 cp2k.psmp -i md.inp -o app.log) ;;
  esac
  (cd "$dir" && exec "$bin" run --log-file run.log --report report/report.json -- "${job[@]}" >out.txt 2>&1) &
  watcher=$!
  # The ranks found: sampling has begun.
  until grep -q "found 4 rank" "$dir/run.log" 2>/dev/null; do
    kill -0 "$watcher" 2>/dev/null || { echo "| $program | the job ended before its ranks were found: $dir/out.txt | | | |"; continue 2; }
    sleep 0.2
  done
  sleep 10
  window=$((seconds - 20))
  first=$(cpu_ticks "$watcher"); t0=$(date +%s.%N); n0=$(wc -l <"$dir/report/report.trace.jsonl" 2>/dev/null || echo 0)
  sleep "$window"
  last=$(cpu_ticks "$watcher"); t1=$(date +%s.%N); n1=$(wc -l <"$dir/report/report.trace.jsonl" 2>/dev/null || echo 0)
  wait "$watcher" || true
  watcher=""
  case $program in
    melt) progress="$(awk '/^ *[0-9]+ +[-0-9.e]+ /{last=$1} END{print last + 0}' "$dir/app.log") steps" ;;
    cp2k) progress="$(grep -c 'MD| Step number' "$dir/app.log" || true) MD steps" ;;
  esac
  verdict=$(sed -n 's/^verdict: *//p' "$dir/report/report.txt" | head -1)
  awk -v a="$first" -v b="$last" -v t0="$t0" -v t1="$t1" -v n0="$n0" -v n1="$n1" -v p="$program" -v g="$progress" -v v="$verdict" 'BEGIN {
    hz = 100; cpu = (b - a) / hz; wall = t1 - t0; samples = (n1 - n0) * 4
    printf "| %s | %.1f | %.0f | %.0f | %s (%s) |\n", p, 100 * cpu / wall, samples / wall, (samples > 0 ? 1e6 * cpu / samples : 0), g, v }'
done
