#!/usr/bin/env bash
# How often Open MPI's own start crashes across nodes under Slurm's PMIx, with the modex's fence
# (Open MPI's default) and without it (what parastack-monitor sets for itself under srun;
# docs/user-guide.md, "Watching a job across nodes"). Not a test: it prints figures. On a
# throw-away Slurm cluster of two emulated nodes (tests/slurm/cluster.sh), ps_mpi_start
# (bench/tools/ps_mpi_start.c: a monitor's first steps, MPI_Init_thread then MPI_Allgather) runs
# as one process per node with `srun --mpi=pmix`, again and again, in blocks of 50 that alternate
# the two settings, while BUSY loops keep the cores busy (the crash needs a loaded machine, as
# CI's two-at-a-time suite is).
# A start failed when srun did; the table also counts those whose output says SIGSEGV.
# About 1.3 s per start: 25 minutes at the defaults.
# Usage: bench/mpi-start.sh [starts per setting (default 600)] [busy loops (default 2)]
set -euo pipefail
cd "$(dirname "$0")/.."
starts=${1:-600}
busy=${2:-2}
build=${PARASTACK_BUILD:-$PWD/build}
program=$build/bench/ps_mpi_start
[ -x "$program" ] || { echo "build first: packaging/bootstrap.sh test (missing $program)" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "run as root: it brings up a Slurm cluster" >&2; exit 1; }

scratch=$(mktemp -d /tmp/parastack-bench-XXXXXX)
chmod 755 "$scratch"
dir=$scratch/cluster
loops=()
cleanup() {
  for pid in "${loops[@]}"; do kill "$pid" 2>/dev/null || true; done
  tests/slurm/cluster.sh down "$dir" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
tests/slurm/cluster.sh up "$dir" 2 >"$scratch/up.log" 2>&1 || { cat "$scratch/up.log"; exit 1; }
. "$dir/env.sh"
mkdir -p "$dir/bin"
cp "$program" "$dir/bin/"
chmod 755 "$dir/bin" "$dir/bin/ps_mpi_start"

declare -A tried=() failed=() segv=()
without_fence="OMPI_MCA_pmix_base_async_modex=1 OMPI_MCA_pmix_base_collect_data=0"
start_once() {  # setting, output file
  local settings=""
  [ "$1" = without ] && settings=$without_fence
  (cd "$dir/jobs" && runuser -u "$PS_USER" -- env $settings \
    srun -N 2 -n 2 --ntasks-per-node=1 --mpi=pmix --kill-on-bad-exit=1 "$dir/bin/ps_mpi_start") >"$2" 2>&1
}

for _ in $(seq 1 "$busy"); do (while :; do :; done) & loops+=($!); done
echo "machine: $(nproc) cores, $busy busy loop(s); Slurm $(sinfo -V | cut -d' ' -f2); $(mpirun --version | head -1)"
echo "ps_mpi_start, 2 processes on 2 emulated nodes, srun --mpi=pmix, $starts starts per setting"
for setting in with without; do tried[$setting]=0 failed[$setting]=0 segv[$setting]=0; done
while (( tried[without] < starts )); do
  for setting in with without; do
    for _ in $(seq 1 50); do
      (( tried[$setting] < starts )) || break
      out=$scratch/out
      tried[$setting]=$(( tried[$setting] + 1 ))
      if ! start_once "$setting" "$out"; then
        failed[$setting]=$(( failed[$setting] + 1 ))
        grep -q "Segmentation fault" "$out" && segv[$setting]=$(( segv[$setting] + 1 ))
        cp "$out" "$scratch/failed.$setting.${failed[$setting]}"
      fi
    done
  done
done
echo
echo "| setting | starts | failed | of them SIGSEGV | failure rate | 95 % upper bound |"
echo "|---|---:|---:|---:|---:|---:|"
for setting in with without; do
  name="with the modex fence (Open MPI's default)"
  [ "$setting" = without ] && name="without it ($without_fence)"
  # Exact one-sided 95 % Clopper-Pearson bound on the rate (for 0 failures: 1 - 0.05^(1/n)).
  bound=$(python3 -c "
from math import comb
n, k = ${tried[$setting]}, ${failed[$setting]}
lo, hi = k / n, 1.0
for _ in range(100):
    p = (lo + hi) / 2
    tail = sum(comb(n, i) * p**i * (1 - p)**(n - i) for i in range(k + 1))
    lo, hi = (p, hi) if tail > 0.05 else (lo, p)
print(f'{hi:.4f}')")
  printf "| %s | %d | %d | %d | %.4f | %s |\n" "$name" "${tried[$setting]}" "${failed[$setting]}" \
    "${segv[$setting]}" "$(awk -v f="${failed[$setting]}" -v n="${tried[$setting]}" 'BEGIN {print f / n}')" "$bound"
done
for f in "$scratch"/failed.*; do
  [ -e "$f" ] || continue
  echo
  echo "== $(basename "$f"):"
  head -12 "$f"
done
