#!/usr/bin/env bash
# Runs the device plugin on this machine's real GPUs against a fake kubelet on a real Unix socket
# (io.qgpu.kubernetes.deviceplugin.RealGpuPluginCheck, in the test sources): registration, ListAndWatch
# (healthy virtual devices on every GPU NVML sees) and Allocate (the GPU's UUID, device nodes that exist
# here). Needs the NVIDIA driver.
#
#   qgpu-kubernetes/device-plugin/check-real-gpu.sh pack OUTDIR   here, with a JDK: builds OUTDIR/dp (classes and the
#                                                         jars it needs, about 25 MiB) for a GPU machine
#   qgpu-kubernetes/device-plugin/check-real-gpu.sh run  OUTDIR   there: runs the check with JAVA (default: java)
#
# A machine without a JDK can take the jlink runtime of samples/nvml-check/make-bundle.sh (JAVA=.../runtime/bin/java).
# Exit code: 0 all checks passed, 1 a check failed, 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cmd=${1:-}
out=${2:-}
[[ -n "$cmd" && -n "$out" ]] || { echo "usage: check-real-gpu.sh pack|run OUTDIR" >&2; exit 2; }

case "$cmd" in
pack)
    (cd "$root" && ./mvnw -B -q -pl qgpu-kubernetes/device-plugin -am package dependency:copy-dependencies -DskipTests \
        -DincludeScope=test -DoutputDirectory='${project.build.directory}/dp-lib') || { echo "the build failed" >&2; exit 2; }
    rm -rf "$out/dp" && mkdir -p "$out/dp/lib"
    # the check needs gRPC, protobuf, JNA, Jackson, SLF4J and JUnit's assertions; not the Kubernetes client
    for j in "$here"/target/dp-lib/*.jar; do
        case "$(basename "$j")" in
            kubernetes-*|bc*|vertx-*|netty-*|okhttp*|okio*|snakeyaml*|jackson-dataformat-yaml*|zjsonpatch*|junit-jupiter-engine*|junit-jupiter-params*|junit-platform-engine*|mockito*|byte-buddy*|objenesis*) ;;
            *) cp "$j" "$out/dp/lib/" ;;
        esac
    done
    cp "$here"/target/qgpu-device-plugin-*-SNAPSHOT.jar "$out/dp/lib/" 2>/dev/null || cp "$here"/target/original-qgpu-device-plugin.jar "$out/dp/lib/"
    cp -r "$here/target/test-classes" "$out/dp/test-classes"
    cp "$0" "$out/dp/check-real-gpu.sh"
    du -sh "$out/dp"
    ;;
run)
    dp="$out/dp"
    [[ -d "$dp/lib" ]] || { echo "no $dp/lib: run 'check-real-gpu.sh pack $out' first" >&2; exit 2; }
    "${JAVA:-java}" --enable-native-access=ALL-UNNAMED ${QGPU_JAVA_OPTS:-} -cp "$dp/test-classes:$dp/lib/*" \
        io.qgpu.kubernetes.deviceplugin.RealGpuPluginCheck
    ;;
*)
    echo "usage: check-real-gpu.sh pack|run OUTDIR" >&2; exit 2 ;;
esac
