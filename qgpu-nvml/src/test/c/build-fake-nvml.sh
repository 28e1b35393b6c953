#!/bin/sh
# Compiles the fake libnvidia-ml.so.1 used by qgpu's tests (called by Maven, see qgpu-nvml/pom.xml).
#   build-fake-nvml.sh SOURCE OUTDIR
# writes OUTDIR/libnvidia-ml.so.1 (full fake), OUTDIR/old/libnvidia-ml.so.1 (no nvmlDeviceGetNumaNodeId)
# and OUTDIR/broken/libnvidia-ml.so.1 (also no nvmlDeviceGetPciInfo_v3).
set -eu
src=$1
out=$2
cc=${CC:-gcc}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "ERROR: '$cc' was not found on PATH. The qgpu-nvml tests run against a fake libnvidia-ml that the" >&2
    echo "ERROR: build compiles from $src with gcc. Install gcc (e.g. 'apt-get install gcc')," >&2
    echo "ERROR: set CC to another C compiler, or skip the tests with -Dmaven.test.skip=true." >&2
    exit 1
fi
mkdir -p "$out/old" "$out/broken"
flags="-std=c11 -O1 -g -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -pthread"
"$cc" $flags -o "$out/libnvidia-ml.so.1" "$src"
"$cc" $flags -DFAKE_NVML_OLD -o "$out/old/libnvidia-ml.so.1" "$src"
"$cc" $flags -DFAKE_NVML_OLD -DFAKE_NVML_BROKEN -o "$out/broken/libnvidia-ml.so.1" "$src"
