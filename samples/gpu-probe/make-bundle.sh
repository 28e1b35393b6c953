#!/usr/bin/env bash
# Makes a bundle that runs run-enforcement-check.sh on a machine with an NVIDIA GPU and no JDK:
#   OUTDIR/runtime/                    a jlink runtime (java.base, java.logging), refused at 64 MiB or more
#   OUTDIR/gpu-probe.jar               the probe with JNA inside
#   OUTDIR/run-enforcement-check.sh    the check (finds gpu-probe.jar beside itself)
#   OUTDIR/run-check.sh                runs it with the bundled runtime: ./run-check.sh [flags of run-enforcement-check.sh]
# and OUTDIR.tar.gz. Copy the tarball to the GPU machine, unpack it and run
#   ./run-check.sh --out results [--hami-core-library /path/to/libvgpu.so]
#
#   samples/gpu-probe/make-bundle.sh [OUTDIR]     (default: samples/gpu-probe/target/qgpu-gpu-probe)
#
# Needs a JDK 17+ (jlink; JLINK or JAVA_HOME name another) and builds the probe with the Maven wrapper when
# target/gpu-probe.jar is missing. Prints the sizes; exit code 1 when the runtime is 64 MiB or more.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/target/qgpu-gpu-probe}

die() { echo "make-bundle: $*" >&2; exit 2; }

jar=$here/target/gpu-probe.jar
if [[ ! -f "$jar" ]]; then
    echo "building the probe (./mvnw -q -pl samples/gpu-probe -am package -Dmaven.test.skip=true) ..." >&2
    (cd "$root" && ./mvnw -q -pl samples/gpu-probe -am package -Dmaven.test.skip=true) || die "the build failed"
fi

rm -rf "$out" "$out.tar.gz"
mkdir -p "$out"
rc=0
"$root/samples/jlink-runtime.sh" "$out/runtime" java.base,java.logging || rc=$?
[[ "$rc" -eq 2 ]] && die "no runtime"
cp "$jar" "$here/run-enforcement-check.sh" "$out/"
cat > "$out/run-check.sh" <<'RUN'
#!/usr/bin/env bash
# Runs run-enforcement-check.sh with the bundled Java runtime and probe: ./run-check.sh [its flags]
set -euo pipefail
b=$(cd "$(dirname "$0")" && pwd)
export JAVA="$b/runtime/bin/java"
export PROBE_CLASSPATH="$b/gpu-probe.jar"
export PROBE_JAVA_OPTS="--enable-native-access=ALL-UNNAMED ${PROBE_JAVA_OPTS:-}"
exec "$b/run-enforcement-check.sh" "$@"
RUN
chmod +x "$out/run-check.sh" "$out/run-enforcement-check.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"

mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "probe $(mib "$(stat -c %s "$out/gpu-probe.jar")"), tarball $(mib "$(stat -c %s "$out.tar.gz")")"
echo "bundle: $out (and $out.tar.gz)"
exit "$rc"
