#!/usr/bin/env bash
# What `sbatch --parastack` costs a healthy job (not a test: it prints figures). On a throw-away
# one-node Slurm cluster (tests/slurm/cluster.sh), two identical 4-rank fixed-work jobs run at the
# same time (machine noise hits both), one with --parastack, one without; the order of submission
# swaps every round. Prints, per round, the MPI program's run time inside each job and each job's
# whole life (submission to COMPLETED, so the monitor step's start and end are counted).
# Usage: bench/slurm-overhead.sh [rounds (default 4)] [stencil iterations (default 150000)]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
iterations=${2:-150000}
build=${PARASTACK_BUILD:-$PWD/build}
for f in monitor/parastack-monitor spank_plugin/parastack.so tests/programs/ps_target; do
  [ -e "$build/$f" ] || { echo "build first: packaging/bootstrap.sh test (missing $build/$f)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "run as root: it brings up a Slurm cluster" >&2; exit 1; }

scratch=$(mktemp -d /tmp/parastack-bench-XXXXXX)
chmod 755 "$scratch"
dir=$scratch/cluster
cleanup() { tests/slurm/cluster.sh down "$dir" >/dev/null 2>&1 || true; rm -rf "$scratch"; }
trap cleanup EXIT
tests/slurm/cluster.sh up "$dir" 0 >"$scratch/up.log" 2>&1 || { cat "$scratch/up.log"; exit 1; }
. "$dir/env.sh"
mkdir -p "$dir/bin"
cp "$build/monitor/parastack-monitor" "$build/spank_plugin/parastack.so" "$build/tests/programs/ps_target" "$dir/bin/"
chmod 755 "$dir/bin" "$dir"/bin/*
echo "required $dir/bin/parastack.so monitor=$dir/bin/parastack-monitor" >"$dir/etc/plugstack.conf"
cat >"$dir/jobs/job.sh" <<EOF
#!/bin/bash
export OMPI_MCA_mpi_yield_when_idle=1
start=\$(date +%s.%N)
srun --mpi=pmix $dir/bin/ps_target healthy $iterations >/dev/null
echo "program_seconds \$(awk -v a="\$start" -v b="\$(date +%s.%N)" 'BEGIN {print b - a}')"
EOF
chown "$PS_USER" "$dir/jobs/job.sh"
chmod 755 "$dir/jobs/job.sh"

submit() { (cd "$dir/jobs" && runuser -u "$PS_USER" -- sbatch --parsable -n 4 -o "$1.out" "${@:2}" job.sh); }
state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z]*' | cut -d= -f2; }
# Seconds from now until the job has ended (COMPLETED or otherwise).
wait_end() {
  local start=$1 id=$2 s
  while s=$(state "$id"); [ -z "$s" ] || [[ "$s" =~ ^(PENDING|RUNNING|CONFIGURING|COMPLETING)$ ]]; do sleep 0.05; done
  echo "$s $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {print b - a}')"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); Slurm $(sinfo -V | cut -d' ' -f2)"
echo "two 4-rank jobs at a time (srun, ps_target healthy $iterations), one with --parastack"
echo
printf "| round | program s without | with --parastack | ratio | job life s without | with --parastack | ratio |\n"
printf "|---:|---:|---:|---:|---:|---:|---:|\n"
program_ratios=() life_ratios=()
for round in $(seq 1 "$rounds"); do
  t0=$(date +%s.%N)
  if (( round % 2 )); then
    a=$(submit plain.$round); b=$(submit watched.$round --parastack)
  else
    b=$(submit watched.$round --parastack); a=$(submit plain.$round)
  fi
  read -r sa la < <(wait_end "$t0" "$a")
  read -r sb lb < <(wait_end "$t0" "$b")
  [ "$sa" = COMPLETED ] && [ "$sb" = COMPLETED ] || { echo "a job did not complete: $sa $sb" >&2; exit 1; }
  pa=$(awk '/program_seconds/ {print $2}' "$dir/jobs/plain.$round.out")
  pb=$(awk '/program_seconds/ {print $2}' "$dir/jobs/watched.$round.out")
  rp=$(awk -v a="$pa" -v b="$pb" 'BEGIN {printf "%.3f", b / a}'); rl=$(awk -v a="$la" -v b="$lb" 'BEGIN {printf "%.3f", b / a}')
  program_ratios+=("$rp"); life_ratios+=("$rl")
  printf "| %d | %.2f | %.2f | %s | %.2f | %.2f | %s |\n" "$round" "$pa" "$pb" "$rp" "$la" "$lb" "$rl"
done
median() { printf "%s\n" "$@" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
echo
echo "ratio medians: program $(median "${program_ratios[@]}"), job life $(median "${life_ratios[@]}")"
