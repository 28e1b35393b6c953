#!/usr/bin/env bash
# Runs a GPU workload and, while it runs, checks qgpu's NVML binding against it on a real GPU:
# check-real-gpu.sh (inventory and process pids against nvidia-smi) and io.qgpu.cli.NvmlLiveCheck
# (the process's memory and SM share through NvmlUsageSampler, the Xid health monitor started and
# stopped, close() twice). The workload is a PyTorch loop (python3 with torch and CUDA) that holds
# MIB MiB of GPU memory and multiplies matrices; LOAD_MIB and SECONDS change its size and the length.
#
#   samples/nvml-check/run-live-check.sh [OUTDIR]      (in the bundle that make-bundle.sh builds too)
#
# Uses JAVA and QGPU_CLASSPATH as check-real-gpu.sh does. Exit code: 0 all passed, 1 a check failed,
# 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/qgpu-nvml-live.XXXXXX")}
mkdir -p "$out"
mib=${LOAD_MIB:-4096}
secs=${SECONDS_TO_RUN:-15}
java=${JAVA:-java}
cp_=${QGPU_CLASSPATH:?set QGPU_CLASSPATH to the qgpu-cli jar and its dependencies}

command -v python3 >/dev/null 2>&1 || { echo "run-live-check: python3 not found" >&2; exit 2; }
ready="$out/load.ready"
rm -f "$ready"
python3 - "$mib" "$((secs + 30))" "$ready" > "$out/load.log" 2>&1 <<'PY' &
import sys, time, torch
mib, dur, ready = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
held = torch.empty(mib * 1024 * 1024, dtype=torch.uint8, device="cuda")
a = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
open(ready, "w").write("ready\n")
end = time.time() + dur
while time.time() < end:
    for _ in range(20):
        a = torch.tanh(a @ a)
    torch.cuda.synchronize()
PY
load=$!
trap 'kill "$load" 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    [[ -f "$ready" ]] && break
    kill -0 "$load" 2>/dev/null || { echo "run-live-check: the workload died:" >&2; cat "$out/load.log" >&2; exit 2; }
    sleep 0.5
done
[[ -f "$ready" ]] || { echo "run-live-check: the workload did not start in 60 s" >&2; exit 2; }
echo "workload pid $load holds $mib MiB" >&2

rc=0
"$here/check-real-gpu.sh" "$out/inventory-check" > "$out/check-real-gpu.txt" 2>&1 || rc=$?
cat "$out/check-real-gpu.txt"
echo "check-real-gpu.sh exit $rc"
set +e
# shellcheck disable=SC2086
"$java" ${QGPU_JAVA_OPTS:-} -cp "$cp_" io.qgpu.cli.NvmlLiveCheck "$load" "$((mib * 9 / 10))" "$secs" | tee "$out/live-check.txt"
live=${PIPESTATUS[0]}
set -e
echo "NvmlLiveCheck exit $live"
[[ "$rc" -ne 0 ]] && exit "$rc"
exit "$live"
