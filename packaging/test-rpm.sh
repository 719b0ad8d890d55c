#!/usr/bin/env bash
# The RPM spec: builds both RPMs with rpmbuild from the source tarball of PACKAGES_BUILD (made by
# packaging/build-packages.sh) in a scratch _topdir, and checks that `rpm -qlp` lists the files an
# admin expects. On Debian, rpm's database knows none of the build dependencies apt installed:
# --nodeps (a RHEL machine builds without it).
# Usage: packaging/test-rpm.sh [PACKAGES_BUILD (default build-packages)]
set -euo pipefail
cd "$(dirname "$0")/.."
packages_build=$(realpath "${1:-build-packages}")
ls "$packages_build"/parastack-*.tar.gz >/dev/null || { echo "error: no source tarball in $packages_build (packaging/build-packages.sh)" >&2; exit 1; }
top=$(mktemp -d)
trap 'rm -rf "$top"' EXIT
echo "== rpmbuild -bb packaging/parastack.spec"
rpmbuild -bb --nodeps --define "_topdir $top" --define "_sourcedir $packages_build" packaging/parastack.spec \
  >"$top/rpmbuild.log" 2>&1 || { tail -30 "$top/rpmbuild.log" >&2; exit 1; }
status=0
expect() {  # expect RPM FILE...: each FILE is in the package's list
  local rpm=$1 list
  shift
  list=$(rpm -qlp "$rpm")
  for f in "$@"; do
    grep -qxE "$f(\.gz)?" <<<"$list" || { echo "error: $(basename "$rpm") lacks $f" >&2; status=1; }
  done
}
tools=("$top"/RPMS/*/parastack-[0-9]*.rpm)
slurm=("$top"/RPMS/*/parastack-slurm-[0-9]*.rpm)
expect "${tools[0]}" /usr/bin/parastack /usr/bin/parastack-monitor /usr/bin/pbs_parastack /etc/parastack/parastack.conf \
  /usr/share/man/man1/parastack.1 /usr/share/man/man1/pbs_parastack.1 /usr/share/man/man5/parastack.conf.5 \
  /usr/share/doc/parastack/user-guide.md /usr/share/doc/parastack/admin-guide.md
expect "${slurm[0]}" /usr/lib64/slurm/parastack.so /usr/share/man/man8/parastack-spank.8
rpm -qp --configfiles "${tools[0]}" | grep -qx /etc/parastack/parastack.conf ||
  { echo "error: parastack.conf is not a config file of the RPM" >&2; status=1; }
[ $status -eq 0 ] && echo "rpm: $(basename "${tools[0]}") and $(basename "${slurm[0]}") hold what they should"
exit $status
