#!/usr/bin/env bash
# The libFuzzer targets (fuzz/, README.md "Sanitizers and fuzzing"): builds them with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer in their own build directory, runs each for
# SECONDS over its seed corpus (fuzz/corpus/TARGET, never written: new inputs go to
# BUILD/fuzz-runs/TARGET), two at a time, and prints a table. Exit status 1 if any target crashed
# or broke an invariant; the input that did is kept in BUILD/fuzz-runs/crash-TARGET-*.
# Usage: bench/fuzz.sh [SECONDS_PER_TARGET (default 600)] [BUILD_DIR (default build-fuzz)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
build=${2:-build-fuzz}
jobs=${FUZZ_JOBS:-2}
targets=(proc_fuzzer wire_fuzzer trace_fuzzer site_config_fuzzer job_options_fuzzer spank_options_fuzzer
         pbs_script_fuzzer python_stack_fuzzer)

CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARASTACK_SANITIZE=ON \
  -DPARASTACK_FUZZ=ON -DPARASTACK_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)" --target parastack_fuzzers

runs=$build/fuzz-runs
mkdir -p "$runs"
run_one() {
  local target=$1
  mkdir -p "$runs/$target"
  rm -f "$runs/crash-$target-"* "$runs/timeout-$target-"* "$runs/oom-$target-"*
  local dict=()
  [ -f "fuzz/$target.dict" ] && dict=(-dict="fuzz/$target.dict")
  # -timeout: one input taking 10 s is a hang; the seed corpus is read, never written.
  "$build/fuzz/$target" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$runs/crash-$target-" "$runs/$target" "fuzz/corpus/$target" >"$runs/$target.log" 2>&1 || true
}
echo "== fuzzing ${#targets[@]} targets, $seconds s each, $jobs at a time ($(nproc) cores)"
running=0
for target in "${targets[@]}"; do
  run_one "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

status=0
printf '%-22s %8s %12s %8s %8s %8s %8s\n' target seconds execs exec/s cov ft crashes
for target in "${targets[@]}"; do
  log=$runs/$target.log
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  crashes=$(find "$runs" -maxdepth 1 -name "*-$target-*" -type f | wc -l)
  printf '%-22s %8s %12s %8s %8s %8s %8s\n' "$target" "$seconds" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$crashes"
  if [ "$crashes" -gt 0 ] || [ -z "$execs" ]; then
    status=1
    echo "   $target: see $log" >&2
  fi
done
exit $status
