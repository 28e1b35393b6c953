#!/usr/bin/env bash
# Makes a bundle that runs check-real-gpu.sh on a machine with an NVIDIA GPU and no JDK:
#   OUTDIR/runtime/        a jlink runtime (java.base, java.xml, java.logging), refused above 64 MiB
#   OUTDIR/lib/            the qgpu CLI jar and its runtime dependencies
#   OUTDIR/run-check.sh    runs check-real-gpu.sh with that runtime and classpath
#   OUTDIR/run-live.sh     runs run-live-check.sh (a PyTorch workload, then both checks) likewise
#   OUTDIR/check-real-gpu.sh, OUTDIR/run-live-check.sh, OUTDIR/fake-nvidia-smi.sh
# and OUTDIR.tar.gz. Copy the tarball to the GPU machine, unpack it and run ./run-check.sh [RESULTDIR].
#
#   samples/nvml-check/make-bundle.sh [OUTDIR]     (default: samples/nvml-check/target/qgpu-nvml-check)
#
# Needs a JDK 17+ (jlink through samples/jlink-runtime.sh; JLINK or JAVA_HOME name another) and builds the CLI with the Maven wrapper when
# samples/qgpu-cli/target has no build. Prints the sizes; exit code 1 when the runtime is 64 MiB or more.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/target/qgpu-nvml-check}
modules=java.base,java.xml,java.logging

die() { echo "make-bundle: $*" >&2; exit 2; }

cli="$root/samples/qgpu-cli/target"
jar=$(ls "$cli"/qgpu-cli-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -n 1 || true)
if [[ -z "$jar" || ! -d "$cli/lib" ]]; then
    echo "building the CLI (./mvnw -q -pl samples/qgpu-cli -am package -Dmaven.test.skip=true) ..." >&2
    (cd "$root" && ./mvnw -q -pl samples/qgpu-cli -am package -Dmaven.test.skip=true) || die "the build failed"
    jar=$(ls "$cli"/qgpu-cli-*.jar | grep -v -e sources -e javadoc | head -n 1)
fi

rm -rf "$out" "$out.tar.gz"
mkdir -p "$out/lib"
rc=0
"$root/samples/jlink-runtime.sh" "$out/runtime" "$modules" || rc=$?
[[ "$rc" -eq 2 ]] && die "no runtime"
cp "$jar" "$cli"/lib/*.jar "$out/lib/"
cp "$here/check-real-gpu.sh" "$here/run-live-check.sh" "$here/fake-nvidia-smi.sh" "$out/"
cat > "$out/run-check.sh" <<'RUN'
#!/usr/bin/env bash
# Runs check-real-gpu.sh with the bundled Java runtime and jars: ./run-check.sh [RESULTDIR]
set -euo pipefail
b=$(cd "$(dirname "$0")" && pwd)
export JAVA="$b/runtime/bin/java"
export QGPU_CLASSPATH="$b/lib/*"
export QGPU_JAVA_OPTS="--enable-native-access=ALL-UNNAMED ${QGPU_JAVA_OPTS:-}"
exec "$b/check-real-gpu.sh" "$@"
RUN
sed -e 's|/check-real-gpu.sh"|/run-live-check.sh"|' -e 's|Runs check-real-gpu.sh|Runs run-live-check.sh|' -e 's|./run-check.sh|./run-live.sh|' \
    "$out/run-check.sh" > "$out/run-live.sh"
chmod +x "$out/run-live.sh" "$out/run-live-check.sh" "$out/run-check.sh" "$out/check-real-gpu.sh" "$out/fake-nvidia-smi.sh"
tar -C "$(dirname "$out")" -czf "$out.tar.gz" "$(basename "$out")"

libs=$(du -sb "$out/lib" | cut -f1)
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "jars $(mib "$libs"), tarball $(mib "$(stat -c %s "$out.tar.gz")")"
echo "bundle: $out (and $out.tar.gz)"
exit "$rc"
