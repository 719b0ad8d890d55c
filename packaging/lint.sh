#!/usr/bin/env bash
# The code checks a change must pass: clang-format on the C and C++ files it changed, and
# clang-tidy (the bug-finding checks of .clang-tidy) on the C++ files it touched, using the build's
# compile commands. "The change" is everything since BASE (default: the merge base with origin/main, else
# the previous commit).
# Usage: packaging/lint.sh [BASE] [BUILD_DIR (default build)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${2:-build}
base=${1:-}
if [ -z "$base" ]; then
  base=$(git merge-base HEAD origin/main 2>/dev/null || true)
  if [ -z "$base" ] || [ "$base" = "$(git rev-parse HEAD)" ]; then base=$(git rev-parse -q --verify HEAD~1 || true); fi
fi
if [ -z "$base" ]; then
  echo "lint: no earlier commit to compare with (a shallow clone?); nothing checked"
  exit 0
fi
mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- '*.cc' '*.h' '*.c' | grep -v '^build' || true)
if [ ${#files[@]} -eq 0 ]; then
  echo "lint: no C or C++ file changed since $(git rev-parse --short "$base")"
  exit 0
fi
status=0
echo "== lint: ${#files[@]} C/C++ file(s) changed since $(git rev-parse --short "$base")"
# Formatting, of the changed files whole, as the test command checks every file: a changed line
# can move its unchanged neighbours (a new struct member realigns the comments beside it), which
# a check of the changed lines alone passes.
formatting=$(clang-format --dry-run "${files[@]}" 2>&1 | grep 'code should be clang-formatted' | cut -d: -f1,2 | sort -u || true)
if [ -n "$formatting" ]; then
  echo "$formatting"
  echo "lint: these lines are not formatted as .clang-format says (clang-format -i FILE fixes them)"
  status=1
fi
[ -f "$build/compile_commands.json" ] || { echo "lint: $build/compile_commands.json missing: build first" >&2; exit 1; }
sources=()
for f in "${files[@]}"; do [[ $f == *.cc ]] && grep -q "\"file\": \".*/$f\"" "$build/compile_commands.json" && sources+=("$f"); done
if [ ${#sources[@]} -gt 0 ]; then
  echo "== clang-tidy: ${#sources[@]} file(s)"
  # The compile commands are GCC's: clang need not know every warning option in them (-Wno-restrict).
  # One clang-tidy per core, a few files each (each prints its findings as it ends a file).
  printf '%s\0' "${sources[@]}" |
    xargs -0 -n 3 -P "$(nproc)" clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option 2>/dev/null ||
    status=1
fi
[ $status -eq 0 ] && echo "lint: clean"
exit $status
