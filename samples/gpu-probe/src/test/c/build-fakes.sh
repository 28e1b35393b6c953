#!/bin/sh
# Builds the test doubles of gpu-probe's tests into OUTDIR: libcuda.so.1 (fake_cuda.c, a pretend CUDA driver)
# and libvgpu.so (an empty shared library, so that LD_PRELOAD of it works in the script test).
#   build-fakes.sh SRCDIR OUTDIR
set -eu
src=$1
out=$2
mkdir -p "$out"
cc=${CC:-cc}
"$cc" -shared -fPIC -O1 -Wall -Wextra -Werror -o "$out/libcuda.so.1" "$src/fake_cuda.c"
printf 'int qgpu_fake_vgpu_marker = 1;\n' > "$out/empty_vgpu.c"
"$cc" -shared -fPIC -o "$out/libvgpu.so" "$out/empty_vgpu.c"
