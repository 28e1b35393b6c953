#!/usr/bin/env bash
# Runs gpu-probe on a machine with an NVIDIA GPU under each enforcement back end and prints, per probe, the
# memory ceiling and the throughput share it got next to the limits it asked for:
#   solo      one probe alone, no back end: the reference for the throughput share (100%)
#   none      two probes at once, no back end: they ask for 30% / 8 GiB and 60% / 16 GiB, nothing enforces it
#   mps       two probes at once under an MPS control daemon this script starts (own pipe and log
#             directories, CUDA_VISIBLE_DEVICES=<the GPU's UUID>) and quits afterwards, with
#             CUDA_MPS_ACTIVE_THREAD_PERCENTAGE 30 / 60 and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT 0=8192M / 0=16384M
#   hami-core the same two under HAMi-core (LD_PRELOAD of libvgpu.so, CUDA_DEVICE_SM_LIMIT 30 / 60,
#             CUDA_DEVICE_MEMORY_LIMIT_0 8192m / 16384m, a cache file each); skipped with a message when
#             no libvgpu.so is given or it does not exist
# The two probes of a pair time their kernels over the same interval (--start-at).
#
#   run-enforcement-check.sh [--out DIR] [--device N] [--seconds S] [--hami-core-library PATH]
#
#   --out DIR                 where the probes' output and summary.txt go (default: a new /tmp/qgpu-enforce.XXXXXX)
#   --device N                the GPU's index as nvidia-smi numbers it (default 0)
#   --seconds S               length of each timed kernel phase (default 20)
#   --hami-core-library PATH  HAMi-core's libvgpu.so (default: $HAMI_CORE_LIBRARY; none: the case is skipped)
#
# Environment: JAVA (default: java on the PATH), PROBE_CLASSPATH (default: gpu-probe.jar beside this script, else
# target/gpu-probe.jar), PROBE_JAVA_OPTS, MPS_CONTROL (default nvidia-cuda-mps-control), NVIDIA_SMI (default
# nvidia-smi), PROBE_ARGS (more gpu-probe flags for every probe, e.g. --library PATH), START_LEAD_S (seconds between starting a pair and its timed phase, default 20: time for the
# memory search). Leaves the GPU's settings (compute mode, clocks) as they are.
# Exit code: 0 every case ran, 1 a probe or the MPS daemon failed, 2 the check could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=""
device=0
seconds=20
hami=${HAMI_CORE_LIBRARY:-}
java=${JAVA:-java}
mps_control=${MPS_CONTROL:-nvidia-cuda-mps-control}
smi=${NVIDIA_SMI:-nvidia-smi}
lead=${START_LEAD_S:-20}

die() { echo "run-enforcement-check: $*" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 = (missing): needs a value"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) need_value "$@"; out=$2; shift 2 ;;
        --device) need_value "$@"; device=$2; shift 2 ;;
        --seconds) need_value "$@"; seconds=$2; shift 2 ;;
        --hami-core-library) need_value "$@"; hami=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) die "$1 = \"${2:-}\": unknown flag (see --help)" ;;
    esac
done
[[ "$device" =~ ^[0-9]+$ ]] || die "--device = \"$device\": must be a GPU index (0, 1, ...)"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--seconds = \"$seconds\": must be a number of seconds"
[[ "$lead" =~ ^[0-9]+$ ]] || die "START_LEAD_S = \"$lead\": must be a whole number of seconds"

jar=${PROBE_CLASSPATH:-}
if [[ -z "$jar" ]]; then
    if [[ -f "$here/gpu-probe.jar" ]]; then jar=$here/gpu-probe.jar; else jar=$here/target/gpu-probe.jar; fi
    [[ -f "$jar" ]] || die "$jar: no such file (build with ./mvnw -pl samples/gpu-probe -am package, or use make-bundle.sh)"
fi
command -v "$java" >/dev/null 2>&1 || die "JAVA = \"$java\": not found"
command -v "$smi" >/dev/null 2>&1 || die "$smi not found: run this on a machine with an NVIDIA GPU and its driver"

query=$("$smi" -i "$device" --query-gpu=uuid,name,driver_version,memory.total --format=csv,noheader,nounits) \
    || die "$smi -i $device failed: no GPU $device?"
IFS=',' read -r uuid name driver memtotal <<<"$query"
uuid=$(echo "$uuid" | xargs); name=$(echo "$name" | xargs); driver=$(echo "$driver" | xargs); memtotal=$(echo "$memtotal" | xargs)
[[ -n "$uuid" ]] || die "$smi reported no UUID for GPU $device"

out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/qgpu-enforce.XXXXXX")}
mkdir -p "$out"
summary=$out/summary.txt
echo "machine: $(hostname); GPU $device: $name ($uuid), ${memtotal} MiB; driver $driver" | tee "$summary"
echo "probe: $jar ($("$java" -version 2>&1 | head -n 1)); kernel phase ${seconds}s" | tee -a "$summary"

# the GPU as the probes see it: CUDA_VISIBLE_DEVICES names it, so it is device 0 for them
export CUDA_VISIBLE_DEVICES=$uuid
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT \
      CUDA_MPS_CLIENT_PRIORITY CUDA_DEVICE_MEMORY_LIMIT CUDA_DEVICE_SM_LIMIT CUDA_DEVICE_MEMORY_SHARED_CACHE LD_PRELOAD || true

failed=0
declare -a rows=()

# probe LABEL ASKED_MIB ASKED_PCT START_AT [VAR=VALUE ...]: runs one probe in the background, output in $out/LABEL.txt
probe() {
    local label=$1 start_at=$4
    shift 4
    # shellcheck disable=SC2086 # PROBE_JAVA_OPTS and PROBE_ARGS are word lists
    env "$@" "$java" ${PROBE_JAVA_OPTS:-} -cp "$jar" io.qgpu.samples.gpuprobe.Main --label "$label" --device 0 --seconds "$seconds" --start-at "$start_at" \
        ${PROBE_ARGS:-} >"$out/$label.txt" 2>"$out/$label.err" &
    pids+=($!)
}

# field FILE KEY: a key's value from the probe's result line
field() { { grep -m 1 '^gpu-probe ' "$1" 2>/dev/null || true; } | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# row CASE LABEL ASKED_MIB ASKED_PCT: reads a finished probe's result and adds a row
row() {
    local case_=$1 label=$2 asked_mib=$3 asked_pct=$4
    local f=$out/$label.txt ceiling ips share
    ceiling=$(field "$f" ceiling_mib)
    ips=$(field "$f" iter_per_s)
    if [[ -z "$ceiling" || -z "$ips" ]]; then
        failed=1
        local why
        why=$(head -c 300 "$out/$label.err" 2>/dev/null | tr '\n' ' ' || true)
        rows+=("$(printf '%-10s %-10s %12s %12s %10s %10s  %s' "$case_" "$label" "$asked_mib" "-" "$asked_pct" "-" "failed: $why")")
        return
    fi
    share=$(awk -v a="$ips" -v b="${solo_ips:-$ips}" 'BEGIN { printf "%.1f", 100 * a / b }')
    rows+=("$(printf '%-10s %-10s %12s %12s %10s %10s  %s' "$case_" "$label" "$asked_mib" "$ceiling" "$asked_pct" "$share" "$ips")")
}

# pair CASE PREFIX [VAR=VALUE ...] -- [VAR=VALUE ...] -- [VAR=VALUE ...]: the 30%/8 GiB and 60%/16 GiB probes at once;
# the first list goes to both, the second to the 30% probe, the third to the 60% probe
pair() {
    local case_=$1 prefix=$2
    shift 2
    local -a common=() a=() b=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do common+=("$1"); shift; done
    shift
    while [[ $# -gt 0 && "$1" != "--" ]]; do a+=("$1"); shift; done
    shift
    b=("$@")
    local start_at=$(( $(date +%s) * 1000 + lead * 1000 ))
    pids=()
    probe "$prefix-30" 8192 30 "$start_at" "${common[@]}" "${a[@]}"
    probe "$prefix-60" 16384 60 "$start_at" "${common[@]}" "${b[@]}"
    for p in "${pids[@]}"; do wait "$p" || true; done
    row "$case_" "$prefix-30" 8192 30
    row "$case_" "$prefix-60" 16384 60
}

echo "solo: one probe, no back end" >&2
pids=()
probe solo - - 0 QGPU_CASE=solo
wait "${pids[0]}" || true
solo_ips=$(field "$out/solo.txt" iter_per_s)
row solo solo - -
[[ -n "$solo_ips" ]] || { printf '%s\n' "${rows[@]}" >&2; die "the solo probe failed: see $out/solo.err"; }

if echo get_server_list | "$mps_control" >/dev/null 2>&1; then
    echo "warning: an MPS control daemon already answers on the default pipe directory: the 'none' case runs through it" | tee -a "$summary" >&2
fi
echo "none: two probes, no back end (limits asked, not enforced)" >&2
pair none none QGPU_CASE=none -- -- 

if command -v "$mps_control" >/dev/null 2>&1; then
    # short paths: the pipe directory holds Unix sockets, whose paths must stay under 108 bytes
    mps_dir=$(mktemp -d /tmp/qgpu-mps.XXXXXX)
    mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    mps_env=(CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" CUDA_MPS_LOG_DIRECTORY="$mps_dir/log")
    quit_mps() {
        echo quit | env "${mps_env[@]}" "$mps_control" >/dev/null 2>&1 || true
        cp -r "$mps_dir/log" "$out/mps-log" 2>/dev/null || true
        rm -rf "$mps_dir"
    }
    echo "mps: starting $mps_control -d (pipe $mps_dir/pipe, log $mps_dir/log)" >&2
    if env "${mps_env[@]}" "$mps_control" -d; then
        trap quit_mps EXIT
        ok=0
        for _ in $(seq 1 50); do
            if echo get_server_list | env "${mps_env[@]}" "$mps_control" >/dev/null 2>&1; then ok=1; break; fi
            sleep 0.2
        done
        if [[ $ok -eq 1 ]]; then
            echo "mps: two probes, 30% / 8 GiB and 60% / 16 GiB" >&2
            pair mps mps "${mps_env[@]}" \
                -- CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M \
                -- CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=16384M
        else
            failed=1
            echo "mps: the control daemon does not answer get_server_list (log: $mps_dir/log)" | tee -a "$summary" >&2
        fi
        quit_mps
        trap - EXIT
    else
        failed=1
        echo "mps: $mps_control -d failed" | tee -a "$summary" >&2
    fi
else
    echo "mps: skipped: $mps_control not found" | tee -a "$summary" >&2
fi

if [[ -n "$hami" && -f "$hami" ]]; then
    hami_dir=$out/hami-core
    mkdir -p "$hami_dir" /tmp/vgpulock
    echo "hami-core: two probes under $hami, 30% / 8 GiB and 60% / 16 GiB" >&2
    pair hami-core hami LD_PRELOAD="$hami" \
        -- CUDA_DEVICE_SM_LIMIT=30 CUDA_DEVICE_MEMORY_LIMIT_0=8192m CUDA_DEVICE_MEMORY_SHARED_CACHE="$hami_dir/hami-30.cache" \
        -- CUDA_DEVICE_SM_LIMIT=60 CUDA_DEVICE_MEMORY_LIMIT_0=16384m CUDA_DEVICE_MEMORY_SHARED_CACHE="$hami_dir/hami-60.cache"
elif [[ -n "$hami" ]]; then
    echo "hami-core: skipped: $hami does not exist" | tee -a "$summary" >&2
else
    echo "hami-core: skipped: no libvgpu.so given (--hami-core-library PATH or HAMI_CORE_LIBRARY)" | tee -a "$summary" >&2
fi

{
    printf '%-10s %-10s %12s %12s %10s %10s  %s\n' case probe asked_mib ceiling_mib asked_pct share_pct iter_per_s
    printf '%s\n' "${rows[@]}"
    echo "share_pct: the probe's kernel throughput in percent of the solo probe's; ceiling_mib: the most device memory it held at once"
} | tee -a "$summary"
echo "output: $out"
exit "$failed"
