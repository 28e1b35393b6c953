#!/usr/bin/env bash
# Makes the small Java runtime the samples' GPU-machine bundles ship (those machines have no JDK):
#   samples/jlink-runtime.sh OUTDIR MODULES      e.g. samples/jlink-runtime.sh target/b/runtime java.base,java.logging
# jlink from JLINK, else $JAVA_HOME/bin/jlink, else jlink on the PATH (a JDK 17+); debug symbols, headers and
# man pages stripped, compressed (zip-6 on JDK 21+, level 2 before). Prints the size; exit code 1 when the
# runtime is 64 MiB or more, 2 when jlink is missing or fails. Used by nvml-check/ and gpu-probe/make-bundle.sh.
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: $0 OUTDIR MODULES" >&2; exit 2; }
out=$1
modules=$2
limit=$((64 * 1024 * 1024))

jlink=${JLINK:-}
if [[ -z "$jlink" ]]; then
    if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/jlink" ]]; then jlink=$JAVA_HOME/bin/jlink; else jlink=jlink; fi
fi
command -v "$jlink" >/dev/null 2>&1 || { echo "jlink-runtime: '$jlink' not found: install a JDK 17+ (or set JLINK / JAVA_HOME)" >&2; exit 2; }

major=$("$jlink" --version | cut -d. -f1)
compress=--compress=2
[[ "$major" -ge 21 ]] && compress=--compress=zip-6

rm -rf "$out"
echo "jlink $("$jlink" --version): $modules" >&2
"$jlink" --add-modules "$modules" --strip-debug --no-header-files --no-man-pages "$compress" --output "$out" \
    || { echo "jlink-runtime: jlink failed" >&2; exit 2; }

size=$(du -sb "$out" | cut -f1)
mib=$(awk -v b="$size" 'BEGIN { printf "%.1f MiB", b / 1048576 }')
echo "runtime $mib (limit 64 MiB): $out"
if [[ "$size" -ge "$limit" ]]; then
    echo "jlink-runtime: the runtime is $mib, not under 64 MiB" >&2
    exit 1
fi
