#!/usr/bin/env bash
# One-command set-up on Debian 12: install the Debian packages that are missing, build, then
#   demo   run the bundled example and show the watchdog's verdict
#   test   run every test (what CI runs)
#   bench  run the benchmark campaigns (docs/statistics.md)
# Run as root, or as a user with sudo for the package step.
set -euo pipefail
cd "$(dirname "$0")/.."

# Build and test dependencies, all from Debian 12 (bookworm).
packages=(cmake ninja-build g++ gfortran pkg-config libgtest-dev nlohmann-json3-dev libcli11-dev
          libunwind-dev libopenmpi-dev openmpi-bin)

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

build() {
  echo "== building in build/"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$(nproc)"
}

demo() {
  local bin=build/monitor/parastack
  demo_dir=$(mktemp -d)
  trap 'rm -rf "$demo_dir"' EXIT
  local dir=$demo_dir
  echo
  echo "== A synthetic 4096-rank solver, sampled the ParaStack way; rank 321 hangs at t = 1800 s."
  "$bin" simulate --shape solver-50ms --duration 2400 --hang-at 1800 --faulty-rank 321 \
    --trace-out "$dir/trace.jsonl"
  echo
  echo "== parastack replay: the model's last decisions and its verdict"
  local status=0
  "$bin" replay "$dir/trace.jsonl" >"$dir/replay.txt" || status=$?
  tail -n 6 "$dir/replay.txt"
  echo "(exit status $status: 3 means a hang was confirmed)"
  echo
  echo "== The same model on 8 synthetic workloads: ~120 healthy job-hours, 40 injected hangs"
  "$bin" simulate --healthy-hours 10 --hangs 5
}

case "${1:-}" in
  demo) install_missing; build; demo ;;
  test) install_missing; build; ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 900 ;;
  bench) install_missing; build; bench/detection-campaign.sh ;;
  *) usage ;;
esac
