#!/usr/bin/env bash
# The Debian packages as an admin uses them: builds them (packaging/build-packages.sh), installs
# them into this machine's root with dpkg, runs Slurm and PBS end-to-end tests of TESTS_BUILD
# (default build) against the installed files (the plugin from Slurm's plugin directory, its
# default monitor /usr/bin/parastack-monitor, /usr/bin/pbs_parastack), removes them and checks that
# only the configuration file is left, then purges and checks that it is gone too.
# Root only (skipped otherwise, as the Slurm tests are); refuses to run where parastack is already
# installed (it would remove it).
# Usage: packaging/test-packages.sh [TESTS_BUILD] [PACKAGES_BUILD (default build-packages)]
set -euo pipefail
cd "$(dirname "$0")/.."
tests_build=${1:-build}
packages_build=${2:-build-packages}
if [ "$(id -u)" -ne 0 ]; then
  echo "packages: skipped: this test installs packages into the root (run it as root)"
  exit 0
fi
for p in parastack parastack-slurm; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "error: $p is installed here already; this test would remove it" >&2
    exit 1
  fi
done

echo "== packages: build"
packaging/build-packages.sh "$packages_build"
trap 'dpkg -P parastack-slurm parastack >/dev/null 2>&1 || true' EXIT
echo "== packages: install"
dpkg -i "$packages_build"/parastack_*.deb "$packages_build"/parastack-slurm_*.deb >/dev/null
installed=$(dpkg -L parastack parastack-slurm | sort -u)
plugin=$(dpkg -L parastack-slurm | grep '/parastack\.so$')
[ -f /etc/parastack/parastack.conf ] || { echo "error: no /etc/parastack/parastack.conf" >&2; exit 1; }
echo "== packages: the Slurm and PBS end-to-end tests against $plugin and /usr/bin"
PARASTACK_INSTALLED_PLUGIN=$plugin PARASTACK_INSTALLED_BINDIR=/usr/bin \
  ctest --test-dir "$tests_build" --output-on-failure --timeout 900 -R \
  '^(SlurmPlugin\.AComputationHangIsCancelledReportedAndMailedToTheOwner|SlurmPlugin\.AHealthySrunJobCompletesUntouchedWithMonitorsBesideIt|PbsOverSlurm\.AHangIsDeletedWithQdelReportedAndMailed)$'

echo "== packages: remove, then purge"
dpkg -r parastack-slurm parastack >/dev/null
left=""
for f in $installed; do
  if [ -e "$f" ] && [ ! -d "$f" ]; then left="$left $f"; fi
done
[ "$left" = " /etc/parastack/parastack.conf" ] || { echo "error: left after dpkg -r:$left" >&2; exit 1; }
dpkg -P parastack >/dev/null
[ ! -e /etc/parastack ] || { echo "error: /etc/parastack left after dpkg -P" >&2; exit 1; }
trap - EXIT
echo "packages: built, installed, tested against the installed files, removed and purged"
