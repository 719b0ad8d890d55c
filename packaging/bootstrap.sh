#!/usr/bin/env bash
# One-command set-up on Debian 12: install the Debian packages that are missing, build, then
#   demo   run the bundled example (a real MPI program that hangs) under parastack; show the report
#   test   run every test (what CI runs)
#   bench  run the benchmark campaigns (docs/statistics.md)
# Run as root, or as a user with sudo for the package step.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build and test dependencies, all from Debian 12 (bookworm).
# graphviz renders the stack trees to SVG (optional at run time); gdb is used by a test that
# attaches a debugger while parastack samples; lammps is a real MPI application the tests watch.
packages=(cmake ninja-build g++ gfortran pkg-config libgtest-dev nlohmann-json3-dev libcli11-dev
          libspdlog-dev libunwind-dev libopenmpi-dev openmpi-bin libslurm-dev graphviz gdb lammps)
# The tests only: emulated hosts (tests/support/emulated_hosts.h) are network, UTS, PID and mount
# namespaces (iproute2), each with tini as init and an ssh server (dropbear) that Open MPI's ssh
# launcher reaches (dropbear-bin installs no service); a real Slurm cluster (tests/slurm/cluster.sh
# runs its own munged, slurmctld and slurmd under a scratch directory) and local mail delivery
# (exim4's default configuration delivers to /var/mail without a daemon). pbs_parastack's tests:
# Slurm's PBS front end (slurm-wlm-torque: real qsub, qdel, qstat over the test cluster), and csh
# (a Torque job script may be run by csh).
# man-db renders the man pages in their test (man --warnings); dpkg-dev and file (dpkg-shlibdeps, for
# CPack) build the .deb packages, rpm builds the RPMs (packaging/test-packages.sh, test-rpm.sh).
# clang-format and clang-tidy check the code (packaging/lint.sh); clang with its runtime libraries
# (libclang-rt-14-dev: AddressSanitizer, UndefinedBehaviorSanitizer, libFuzzer) builds the sanitizer
# tests and the fuzzers (check_sanitized). The MPIs users bring besides Open MPI: MPICH (mpich,
# libmpich-dev: mpiexec.hydra, mpicc.mpich; Open MPI's alternatives keep the higher priority, so
# mpicc and mpirun stay Open MPI's) and Python's mpi4py (python3-mpi4py).
test_packages=(iproute2 procps tini dropbear-bin openssh-client slurmd slurmctld slurm-client munge exim4-daemon-light
               slurm-wlm-torque csh man-db dpkg-dev file rpm clang-format clang-tidy clang libclang-rt-14-dev
               mpich libmpich-dev python3-mpi4py)
# The benchmarks only: bench/watchdog.sh watches Debian's hpcc and the LAMMPS examples (melt, peptide);
# bench/monitor-cpu.sh also cp2k (deep stacks through many libraries: what unwinding costs).
bench_packages=(hpcc lammps-examples cp2k)

usage() {
  echo "usage: $0 demo|test|bench" >&2
  exit 2
}

install_missing() {
  local missing=() p
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "error: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The developers' build (CMakePresets.json "dev": warnings are errors); TARGETS... only those.
# Line tables only (-g1) for our own code: the same machine code (GCC's -g never changes it) and
# backtraces with file and line, a quarter less compile time than -g. The test programs, built as a
# user's application built for debugging, keep their own -g (tests/programs/CMakeLists.txt).
build() {
  echo "== building in build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARASTACK_WERROR=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
  cmake --build build -j"$(nproc)" ${1:+--target "$@"}
}

# What a packager builds: Release with the default options (warnings are not errors there) and
# prefix /usr, in build-release; the unit tests run on it, and the packages are made from it later
# (packaging/build-packages.sh build-release: the same objects, not a fresh build).
# This build and the sanitizer build are unity builds (CMAKE_UNITY_BUILD: a target's sources
# compiled a batch at a time, so CLI11's, nlohmann-json's and GoogleTest's headers are compiled once
# per batch, not once per file): 5 min 40 s becomes 3 min 37 s on 2 cores. build/ stays one object
# per file, for quick rebuilds and for clang-tidy, which reads its compile commands per file.
check_release() {
  echo "== Release build with the default options, unit tests on it (build-release)"
  cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
    -DCMAKE_UNITY_BUILD=ON >/dev/null
  cmake --build build-release -j"$(nproc)" --target parastack parastack-monitor pbs_parastack parastack_spank \
    parastack_fast_tests
  ctest --test-dir build-release -L unit --output-on-failure -j"$(nproc)" --timeout 900
}

# Every C++ file formatted as .clang-format says (seconds), and the C++ files of the last day of
# commits through clang-tidy's bug-finding checks: a session's work, whose last commit is often a
# docs one that would leave clang-tidy nothing to check (the whole tree takes 10 minutes on 2 cores:
# packaging/lint.sh with an older BASE, by hand).
check_code() {
  echo "== checking the code: clang-format on every file, clang-tidy on the last day of commits"
  local unformatted
  unformatted=$(git ls-files '*.cc' '*.h' '*.c' | xargs clang-format --dry-run 2>&1 | grep 'code should be clang-formatted' | cut -d: -f1,2 | sort -u || true)
  if [ -n "$unformatted" ]; then
    echo "$unformatted" | head -20
    echo "error: these lines are not formatted as .clang-format says (clang-format -i FILE fixes them)" >&2
    return 1
  fi
  # The newest commit more than a day older than HEAD (none in a young or shallow history: lint.sh
  # then takes the previous commit).
  local day_before
  day_before=$(git rev-list -1 --before="@$(($(git log -1 --format=%ct) - 86400))" HEAD 2>/dev/null || true)
  packaging/lint.sh "$day_before" build
}

# The unit and cli tests under AddressSanitizer and UndefinedBehaviorSanitizer, then each libFuzzer
# target for 20 s over its seed corpus: one clang build in build-asan for both, holding only what
# they need (README.md, "Sanitizers and fuzzing"). A unity build (above) with line tables only: all
# a sanitizer's report needs to name file and line.
check_sanitized() {
  echo "== sanitizers: unit and cli tests under ASan+UBSan, then each fuzzer for 20 s (build-asan)"
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARASTACK_SANITIZE=ON \
    -DPARASTACK_FUZZ=ON -DPARASTACK_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" >/dev/null
  cmake --build build-asan -j"$(nproc)" --target parastack_fast_tests parastack_fuzzers
  ctest --test-dir build-asan -L 'unit|cli' --output-on-failure -j"$(nproc)" --timeout 900
  bench/fuzz.sh 20 build-asan
}

# Runs one stage of the test command and keeps its wall time; the times are printed when the
# command ends, failed or not (README.md's breakdown by stage comes from them).
stage_times=() stage_running="" stage_start=0
stage_line() {
  printf '%-44s %3d min %02d s%s' "$1" $(((SECONDS - stage_start) / 60)) $(((SECONDS - stage_start) % 60)) "${2:-}"
}
stage() {
  stage_running=$1 stage_start=$SECONDS
  shift
  "$@"
  stage_times+=("$(stage_line "$stage_running")")
  stage_running=""
}
print_stage_times() {
  [ -n "$stage_running" ] && stage_times+=("$(stage_line "$stage_running" " (failed or stopped here)")")
  [ ${#stage_times[@]} -eq 0 ] && return 0
  echo "== wall time by stage ($((SECONDS / 60)) min $((SECONDS % 60)) s in all)"
  printf '   %s\n' "${stage_times[@]}"
}

demo() {
  local bin=build/monitor/parastack dir=build/demo status=0
  mkdir -p "$dir"
  rm -f "$dir"/report.*
  # Open MPI refuses root unless told, and 4 ranks on fewer cores must yield when idle.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
  echo
  echo "== A 4-rank heat solver whose rank 2 falls into an endless loop after 60 s, under parastack"
  echo "   parastack run --report $dir/report.json -- mpirun -np 4 heat 600 --bug-rank 2 --bug-after 60"
  # A safety net for the demo only: should the hang go unseen, end it after 10 minutes.
  timeout 600 "$bin" run --report "$dir/report.json" -- \
    mpirun --oversubscribe -np 4 build/tests/programs/heat 600 --bug-rank 2 --bug-after 60 || status=$?
  echo "(parastack exit status $status: 3 means a hang was detected and the job killed)"
  echo
  echo "== The report ($dir/report.txt; JSON, DOT, SVG and the sample trace beside it)"
  cat "$dir/report.txt"
  echo
  echo "== parastack replay $dir/report.trace.jsonl: the model's decision, reproduced from the trace"
  "$bin" replay "$dir/report.trace.jsonl" | tail -n 2 || true
}

case "${1:-}" in
  demo) install_missing; build parastack parastack-monitor heat; demo ;;
  # Each test runs once: a test that fails now and then is a bug to find (it may be a harmed job).
  test) packages+=("${test_packages[@]}"); trap print_stage_times EXIT
        stage "installing missing packages" install_missing
        stage "dev build (build/)" build
        stage "clang-format, clang-tidy" check_code
        stage "release build, unit tests (build-release/)" check_release
        stage "ASan+UBSan tests, fuzzers (build-asan/)" check_sanitized
        stage "main suite (ctest in build/)" ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900
        stage "packages: build, install, test, remove" packaging/test-packages.sh build build-release
        stage "RPM" packaging/test-rpm.sh build-release ;;
  bench) packages+=("${test_packages[@]}" "${bench_packages[@]}"); install_missing; build; bench/detection-campaign.sh; bench/monitor-network.sh
         bench/slurm-overhead.sh ;;
  *) usage ;;
esac
