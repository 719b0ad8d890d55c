#!/usr/bin/env bash
# Checks every quoted include of monitor/src and bench/tools against the layer table of
# docs/design.md: a layer includes its own headers and those of the layers below it, never a "../"
# path. Prints each violation; exits 1 if there is one.
set -euo pipefail
root=${1:-$(dirname "$0")/../..}
order=(os sampler node network watch cli bench)
rank_of() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
bad=0
while IFS= read -r file; do
  rel=${file#"$root"/}
  case $rel in
    monitor/src/*) layer=${rel#monitor/src/}; layer=${layer%%/*} ;;
    bench/tools/*) layer=bench ;;
  esac
  mine=$(rank_of "$layer")
  while IFS= read -r header; do
    [ -n "$header" ] || continue
    if [[ $header == *../* ]]; then echo "$rel: \"$header\": no ../ includes"; bad=1; continue; fi
    [[ $header == */* ]] || continue  # the file's own folder (bench/tools), or a library's
    target=$(rank_of "${header%%/*}")
    (( target < 0 )) && continue      # parastack/..., nlohmann/..., CLI/...: not a layer
    if (( target > mine )); then echo "$rel: \"$header\": $layer may not include ${header%%/*}"; bad=1; fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find "$root/monitor/src" "$root/bench/tools" -name '*.cc' -o -name '*.h' | sort)
if (( bad )); then exit 1; fi
echo "every include of monitor/src and bench/tools goes down the layers"
