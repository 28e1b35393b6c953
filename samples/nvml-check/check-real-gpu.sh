#!/usr/bin/env bash
# Runs qgpu's NVML discovery on this machine and compares it with nvidia-smi:
# GPU count, UUIDs, names, memory, minor numbers, PCI bus ids, MIG mode, index order, running process
# pids, and from nvidia-smi topo -m the CPU and NUMA affinity and the link of every pair. Needs an NVIDIA
# driver (nvidia-smi, libnvidia-ml.so.1) and Java 17+: on a machine without a JDK, unpack the bundle that
# make-bundle.sh builds and run its run-check.sh, which calls this script with the bundled runtime.
#
#   samples/nvml-check/check-real-gpu.sh [OUTDIR]
#
# The CLI classpath comes from QGPU_CLASSPATH, else from samples/qgpu-cli/target (build it once with
# `./mvnw -pl samples/qgpu-cli -am package -Dmaven.test.skip=true`; the script does that itself when a JDK and the
# Maven wrapper are at hand). Extra JVM options (e.g. -Dqgpu.nvml.library=/path/libnvidia-ml.so.1) go in
# QGPU_JAVA_OPTS; NVIDIA_SMI names another nvidia-smi. Results are written to OUTDIR (default: a temp dir).
# Exit code: 0 all checks passed, 1 a mismatch, 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/qgpu-nvml-check.XXXXXX")}
mkdir -p "$out"
smi=${NVIDIA_SMI:-nvidia-smi}
java=${JAVA:-java}
node=${HOSTNAME:-$(uname -n)}

die() { echo "check-real-gpu: $*" >&2; exit 2; }

command -v "$smi" >/dev/null 2>&1 || die "'$smi' not found: is the NVIDIA driver installed? (set NVIDIA_SMI to its path)"
command -v "$java" >/dev/null 2>&1 || die "'$java' not found: install a Java 17+ runtime (or set JAVA)"

cp_=${QGPU_CLASSPATH:-}
if [[ -z "$cp_" ]]; then
    cli="$root/samples/qgpu-cli/target"
    jar=$(ls "$cli"/qgpu-cli-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -n 1 || true)
    if [[ -z "$jar" || ! -d "$cli/lib" ]]; then
        if [[ -x "$root/mvnw" ]] && command -v javac >/dev/null 2>&1; then
            echo "building the CLI (./mvnw -q -pl samples/qgpu-cli -am package -Dmaven.test.skip=true) ..." >&2
            (cd "$root" && ./mvnw -q -pl samples/qgpu-cli -am package -Dmaven.test.skip=true) || die "the build failed"
            jar=$(ls "$cli"/qgpu-cli-*.jar | grep -v -e sources -e javadoc | head -n 1)
        else
            die "no CLI build in $cli and no JDK to build one: set QGPU_CLASSPATH to the qgpu-cli jar and its dependencies"
        fi
    fi
    cp_="$jar:$cli/lib/*"
fi

echo "== nvidia-smi" >&2
"$smi" -q -x > "$out/nvidia-smi.xml" || die "nvidia-smi -q -x failed"
"$smi" topo -m > "$out/nvidia-smi-topo.txt" 2>&1 || { echo "(nvidia-smi topo -m failed; topology not compared)" >&2; rm -f "$out/nvidia-smi-topo.txt"; }
"$smi" -L >&2 || true

echo "== qgpu inventory" >&2
# shellcheck disable=SC2086
"$java" ${QGPU_JAVA_OPTS:-} -cp "$cp_" io.qgpu.cli.Main inventory --node "$node" > "$out/inventory.txt" \
    || die "qgpu inventory failed (see above)"
# shellcheck disable=SC2086
"$java" ${QGPU_JAVA_OPTS:-} -cp "$cp_" io.qgpu.cli.Main inventory --json --node "$node" > "$out/inventory.json" \
    || die "qgpu inventory --json failed (see above)"
cat "$out/inventory.txt" >&2

echo "== comparison" >&2
topo=()
[[ -f "$out/nvidia-smi-topo.txt" ]] && topo=("$out/nvidia-smi-topo.txt")
set +e
# shellcheck disable=SC2086
"$java" ${QGPU_JAVA_OPTS:-} -cp "$cp_" io.qgpu.cli.NvmlSmiCheck "$out/inventory.json" "$out/nvidia-smi.xml" ${topo[@]+"${topo[@]}"} \
    | tee "$out/comparison.txt"
rc=${PIPESTATUS[0]}
set -e
echo "results in $out" >&2
exit "$rc"
