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
# Then, where a container runtime with NVIDIA support is there (docker with the nvidia runtime or the NVIDIA
# container toolkit, or docker / podman with a CDI device nvidia.com/gpu=<UUID>; skipped with a line saying what is
# missing otherwise), the same probes in real containers, each engine given to them as qgpu's node agents give it:
#   MPS: the pipe directory of a daemon this script starts mounted at /tmp/nvidia-mps, --ipc host, the CUDA_MPS_*
#        limits in the environment
#   HAMi-core: libvgpu.so mounted read-only at /usr/local/vgpu/libvgpu.so, a preload file naming it mounted
#        read-only at /etc/ld.so.preload (no LD_PRELOAD), a cache directory of the container's own at
#        /usr/local/vgpu/cache, /tmp/vgpulock, the CUDA_DEVICE_* limits in the environment
# and per engine these checks (rows of the "containers" table):
#   limits    two containers at once, 30% / 8 GiB and 60% / 16 GiB
#   non-root  one container as --user 65534:65534, 30% / 8 GiB
#   uids      two tenants at once with different uids (--user 1000:1000 and --user 2000:2000)
#   unset     a client that drops its limit variables (env -u ...) inside its container
#   env-i     a client started with env -i inside its container
#   skip-mps  (MPS) a client whose CUDA_MPS_PIPE_DIRECTORY points elsewhere, so it does not connect to MPS
#   no-ld-preload (HAMi-core) a client started with env -u LD_PRELOAD
#   restart   what an agent's stop and start do to the engine while a client runs: MPS: the control daemon is
#             quit and started again in the middle of the client's kernel phase, then a new client runs;
#             HAMi-core: the preload file is written again (renamed over, as the agent writes it) in the
#             middle of the kernel phase, then a second probe runs in the same container (exec)
# A container probe that fails is a row with its error: a client the engine stops may fail by design.
# The mem column says whether the memory ceiling stayed within the amount asked for (held) or not (exceeded).
#
#   run-enforcement-check.sh [--out DIR] [--device N] [--seconds S] [--hami-core-library PATH]
#                            [--containers auto|docker|podman|off] [--container-image IMAGE] [--dry-run]
#
#   --out DIR                 where the probes' output and summary.txt go (default: a new /tmp/qgpu-enforce.XXXXXX)
#   --device N                the GPU's index as nvidia-smi numbers it (default 0)
#   --seconds S               length of each timed kernel phase (default 20)
#   --hami-core-library PATH  HAMi-core's libvgpu.so (default: $HAMI_CORE_LIBRARY; none: the case is skipped)
#   --containers MODE         auto (default: docker, then podman), docker, podman, or off
#   --container-image IMAGE   the image the container probes run in (default: $CONTAINER_IMAGE or ubuntu:22.04);
#                             the probe and its Java runtime come from the bundle (make-bundle.sh), mounted
#                             read-only at /qgpu: run the container checks from the bundle (./run-check.sh)
#   --dry-run                 print what would run (commands, mounts, variables) and start nothing
#
# Environment: JAVA (default: java on the PATH), PROBE_CLASSPATH (default: gpu-probe.jar beside this script, else
# target/gpu-probe.jar), PROBE_JAVA_OPTS, MPS_CONTROL (default nvidia-cuda-mps-control), NVIDIA_SMI (default
# nvidia-smi), PROBE_ARGS (more gpu-probe flags for every probe on the host, e.g. --library PATH), START_LEAD_S
# (seconds between starting a pair and its timed phase, default 20: time for the memory search), CONTAINERS,
# CONTAINER_IMAGE. Leaves the GPU's settings (compute mode, clocks) as they are.
# Exit code: 0 every case ran, 1 a probe on the host or an MPS daemon failed, 2 the check could not run.
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
containers=${CONTAINERS:-auto}
image=${CONTAINER_IMAGE:-ubuntu:22.04}
dry=0

die() { echo "run-enforcement-check: $*" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 = (missing): needs a value"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --out) need_value "$@"; out=$2; shift 2 ;;
        --device) need_value "$@"; device=$2; shift 2 ;;
        --seconds) need_value "$@"; seconds=$2; shift 2 ;;
        --hami-core-library) need_value "$@"; hami=$2; shift 2 ;;
        --containers) need_value "$@"; containers=$2; shift 2 ;;
        --container-image) need_value "$@"; image=$2; shift 2 ;;
        --dry-run) dry=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
        *) die "$1 = \"${2:-}\": unknown flag (see --help)" ;;
    esac
done
[[ "$device" =~ ^[0-9]+$ ]] || die "--device = \"$device\": must be a GPU index (0, 1, ...)"
[[ "$seconds" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--seconds = \"$seconds\": must be a number of seconds"
[[ "$lead" =~ ^[0-9]+$ ]] || die "START_LEAD_S = \"$lead\": must be a whole number of seconds"
[[ "$containers" =~ ^(auto|docker|podman|off)$ ]] || die "--containers = \"$containers\": must be one of auto, docker, podman, off"

# say: a command as it would run, one line, quoted for a shell
say() {
    local s="+"
    local a
    for a in "$@"; do s+=" $(printf '%q' "$a")"; done
    echo "$s"
}
# x: runs a command, or with --dry-run prints it
x() { if [[ $dry -eq 1 ]]; then say "$@"; else "$@"; fi; }

jar=${PROBE_CLASSPATH:-}
if [[ -z "$jar" ]]; then
    if [[ -f "$here/gpu-probe.jar" ]]; then jar=$here/gpu-probe.jar; else jar=$here/target/gpu-probe.jar; fi
    [[ -f "$jar" || $dry -eq 1 ]] || die "$jar: no such file (build with ./mvnw -pl samples/gpu-probe -am package, or use make-bundle.sh)"
fi
read -r -a java_opts <<<"${PROBE_JAVA_OPTS:-}"
read -r -a probe_args <<<"${PROBE_ARGS:-}"
caps=NVIDIA_DRIVER_CAPABILITIES=compute,utility

if [[ $dry -eq 1 ]] && ! command -v "$smi" >/dev/null 2>&1; then
    uuid="GPU-<uuid of GPU $device>"; name="<name>"; driver="<driver>"; memtotal="<MiB>"
else
    command -v "$java" >/dev/null 2>&1 || [[ $dry -eq 1 ]] || die "JAVA = \"$java\": not found"
    command -v "$smi" >/dev/null 2>&1 || die "$smi not found: run this on a machine with an NVIDIA GPU and its driver"
    query=$("$smi" -i "$device" --query-gpu=uuid,name,driver_version,memory.total --format=csv,noheader,nounits) \
        || die "$smi -i $device failed: no GPU $device?"
    IFS=',' read -r uuid name driver memtotal <<<"$query"
    uuid=$(echo "$uuid" | xargs); name=$(echo "$name" | xargs); driver=$(echo "$driver" | xargs); memtotal=$(echo "$memtotal" | xargs)
    [[ -n "$uuid" ]] || die "$smi reported no UUID for GPU $device"
fi

out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/qgpu-enforce.XXXXXX")}
mkdir -p "$out"
summary=$out/summary.txt
echo "machine: $(hostname); GPU $device: $name ($uuid), ${memtotal} MiB; driver $driver" | tee "$summary"
if [[ $dry -eq 1 ]]; then
    echo "dry run: nothing is started; the commands follow" | tee -a "$summary"
else
    echo "probe: $jar ($("$java" -version 2>&1 | head -n 1)); kernel phase ${seconds}s" | tee -a "$summary"
fi

# the GPU as the probes see it: CUDA_VISIBLE_DEVICES names it, so it is device 0 for them
export CUDA_VISIBLE_DEVICES=$uuid
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT \
      CUDA_MPS_CLIENT_PRIORITY CUDA_DEVICE_MEMORY_LIMIT CUDA_DEVICE_SM_LIMIT CUDA_DEVICE_MEMORY_SHARED_CACHE LD_PRELOAD || true

failed=0
declare -a rows=()
declare -a crows=()
pids=()

# probe LABEL ASKED_MIB ASKED_PCT START_AT [VAR=VALUE ...]: runs one probe in the background, output in $out/LABEL.txt
probe() {
    local label=$1 start_at=$4
    shift 4
    local -a cmd=(env "$@" "$java" "${java_opts[@]}" -cp "$jar" io.qgpu.samples.gpuprobe.Main --label "$label" --device 0
        --seconds "$seconds" --start-at "$start_at" "${probe_args[@]}")
    if [[ $dry -eq 1 ]]; then
        say "${cmd[@]}"
        echo "    (in the background; output $out/$label.txt)"
        return
    fi
    "${cmd[@]}" >"$out/$label.txt" 2>"$out/$label.err" &
    pids+=($!)
}

# field FILE KEY: a key's value from the probe's result line
field() { { grep -m 1 '^gpu-probe ' "$1" 2>/dev/null || true; } | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# share IPS: the throughput in percent of the solo probe's
share() { awk -v a="$1" -v b="${solo_ips:-$1}" 'BEGIN { printf "%.1f", 100 * a / b }'; }

# row CASE LABEL ASKED_MIB ASKED_PCT: reads a finished probe's result and adds a row
row() {
    [[ $dry -eq 1 ]] && return 0
    local case_=$1 label=$2 asked_mib=$3 asked_pct=$4
    local f=$out/$label.txt ceiling ips
    ceiling=$(field "$f" ceiling_mib)
    ips=$(field "$f" iter_per_s)
    if [[ -z "$ceiling" || -z "$ips" ]]; then
        failed=1
        local why
        why=$(head -c 300 "$out/$label.err" 2>/dev/null | tr '\n' ' ' || true)
        rows+=("$(printf '%-10s %-10s %12s %12s %10s %10s  %s' "$case_" "$label" "$asked_mib" "-" "$asked_pct" "-" "failed: $why")")
        return
    fi
    rows+=("$(printf '%-10s %-10s %12s %12s %10s %10s  %s' "$case_" "$label" "$asked_mib" "$ceiling" "$asked_pct" "$(share "$ips")" "$ips")")
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

# mps_up DIR: starts an MPS control daemon with DIR/pipe and DIR/log and waits until it answers; sets mps_env
mps_up() {
    local dir=$1
    mps_env=(CUDA_MPS_PIPE_DIRECTORY="$dir/pipe" CUDA_MPS_LOG_DIRECTORY="$dir/log")
    echo "mps: starting $mps_control -d (pipe $dir/pipe, log $dir/log)" >&2
    x env "${mps_env[@]}" "$mps_control" -d || { echo "mps: $mps_control -d failed" | tee -a "$summary" >&2; return 1; }
    [[ $dry -eq 1 ]] && return 0
    local _
    for _ in $(seq 1 50); do
        if echo get_server_list | env "${mps_env[@]}" "$mps_control" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    echo "mps: the control daemon does not answer get_server_list (log: $dir/log)" | tee -a "$summary" >&2
    return 1
}

# mps_quit: sends quit to the daemon of mps_env (best effort: it may be gone)
mps_quit() {
    if [[ $dry -eq 1 ]]; then
        echo "+ echo quit | $(say env "${mps_env[@]}" "$mps_control" | cut -c3-)"
        return 0
    fi
    local t=()
    command -v timeout >/dev/null 2>&1 && t=(timeout 60)
    echo quit | "${t[@]}" env "${mps_env[@]}" "$mps_control" >/dev/null 2>&1 || true
}

echo "solo: one probe, no back end" >&2
pids=()
probe solo - - 0 QGPU_CASE=solo
solo_ips=""
if [[ $dry -eq 0 ]]; then
    wait "${pids[0]}" || true
    solo_ips=$(field "$out/solo.txt" iter_per_s)
    row solo solo - -
    [[ -n "$solo_ips" ]] || { printf '%s\n' "${rows[@]}" >&2; die "the solo probe failed: see $out/solo.err"; }
    if echo get_server_list | "$mps_control" >/dev/null 2>&1; then
        echo "warning: an MPS control daemon already answers on the default pipe directory: the 'none' case runs through it" | tee -a "$summary" >&2
    fi
fi
echo "none: two probes, no back end (limits asked, not enforced)" >&2
pair none none QGPU_CASE=none -- -- 

if command -v "$mps_control" >/dev/null 2>&1 || [[ $dry -eq 1 ]]; then
    # short paths: the pipe directory holds Unix sockets, whose paths must stay under 108 bytes
    if [[ $dry -eq 1 ]]; then mps_dir=/tmp/qgpu-mps.XXXXXX; else mps_dir=$(mktemp -d /tmp/qgpu-mps.XXXXXX); fi
    x mkdir -p "$mps_dir/pipe" "$mps_dir/log"
    quit_mps() {
        mps_quit
        if [[ $dry -eq 0 ]]; then
            cp -r "$mps_dir/log" "$out/mps-log" 2>/dev/null || true
            rm -rf "$mps_dir"
        fi
    }
    if mps_up "$mps_dir"; then
        trap quit_mps EXIT
        echo "mps: two probes, 30% / 8 GiB and 60% / 16 GiB" >&2
        pair mps mps "${mps_env[@]}" \
            -- CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M \
            -- CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60 CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=16384M
        quit_mps
        trap - EXIT
    else
        failed=1
        quit_mps
    fi
else
    echo "mps: skipped: $mps_control not found" | tee -a "$summary" >&2
fi

if [[ -n "$hami" && ( -f "$hami" || $dry -eq 1 ) ]]; then
    hami_dir=$out/hami-core
    x mkdir -p "$hami_dir" /tmp/vgpulock
    echo "hami-core: two probes under $hami, 30% / 8 GiB and 60% / 16 GiB" >&2
    pair hami-core hami LD_PRELOAD="$hami" \
        -- CUDA_DEVICE_SM_LIMIT=30 CUDA_DEVICE_MEMORY_LIMIT_0=8192m CUDA_DEVICE_MEMORY_SHARED_CACHE="$hami_dir/hami-30.cache" \
        -- CUDA_DEVICE_SM_LIMIT=60 CUDA_DEVICE_MEMORY_LIMIT_0=16384m CUDA_DEVICE_MEMORY_SHARED_CACHE="$hami_dir/hami-60.cache"
elif [[ -n "$hami" ]]; then
    echo "hami-core: skipped: $hami does not exist" | tee -a "$summary" >&2
else
    echo "hami-core: skipped: no libvgpu.so given (--hami-core-library PATH or HAMI_CORE_LIBRARY)" | tee -a "$summary" >&2
fi

# ------------------------------------------------------------------------------------------------ containers

rt=""
gpu_args=()
ctr_java=/qgpu/runtime/bin/java
ctr_jar=/qgpu/gpu-probe.jar

# ctr_skip WHY: the container checks do not run, saying why
ctr_skip() { echo "containers: skipped: $*" | tee -a "$summary"; }

# detect_runtime: sets rt and gpu_args to a container runtime with NVIDIA support, or ctr_why and returns 1
detect_runtime() {
    local -a candidates=(docker podman) why=()
    [[ $containers == auto ]] || candidates=("$containers")
    local c
    for c in "${candidates[@]}"; do
        if ! command -v "$c" >/dev/null 2>&1; then why+=("$c not found"); continue; fi
        if ! "$c" info >/dev/null 2>&1; then why+=("'$c info' failed (no daemon, or no permission)"); continue; fi
        if [[ $c == docker ]] && docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"nvidia"'; then
            rt=docker
            gpu_args=(--runtime nvidia -e "NVIDIA_VISIBLE_DEVICES=$uuid" -e "$caps")
            return 0
        fi
        if command -v nvidia-ctk >/dev/null 2>&1 && nvidia-ctk cdi list 2>/dev/null | grep -qx "nvidia.com/gpu=$uuid"; then
            rt=$c
            gpu_args=(--device "nvidia.com/gpu=$uuid")
            return 0
        fi
        if [[ $c == docker ]] && command -v nvidia-container-cli >/dev/null 2>&1; then
            rt=docker
            gpu_args=(--gpus "device=$uuid" -e "$caps")
            return 0
        fi
        why+=("$c has no NVIDIA support (no nvidia runtime in '$c info', no CDI device nvidia.com/gpu=$uuid in 'nvidia-ctk cdi list', no nvidia-container-cli)")
    done
    ctr_why=$(IFS=';'; echo "${why[*]}")
    ctr_why=${ctr_why//;/; }
    return 1
}

# cjob LABEL START_AT SECONDS [runtime args ...] -- [command prefix ...]: one probe in a container, in the
# background; output in $out/LABEL.txt and .err, the runtime's exit status and the wall seconds in $out/LABEL.meta
cjob() {
    local label=$1 start_at=$2 secs=$3
    shift 3
    local -a rargs=() prefix=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do rargs+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    prefix=("$@")
    local -a cmd=("$rt" run --rm --name "qgpu-probe-$label-$$" "${gpu_args[@]}" -v "$here:/qgpu:ro" "${rargs[@]}" "$image"
        "${prefix[@]}" "$ctr_java" "${java_opts[@]}" -cp "$ctr_jar" io.qgpu.samples.gpuprobe.Main --label "$label" --device 0
        --seconds "$secs" --start-at "$start_at")
    if [[ $dry -eq 1 ]]; then
        say "${cmd[@]}"
        echo "    (in the background; output $out/$label.txt)"
        return
    fi
    (
        s=$(date +%s.%N)
        rc=0
        "${cmd[@]}" >"$out/$label.txt" 2>"$out/$label.err" || rc=$?
        e=$(date +%s.%N)
        echo "rc=$rc wall_s=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')" >"$out/$label.meta"
    ) &
    pids+=($!)
}

# cwait: waits for the container jobs started since pids was last emptied
cwait() {
    [[ $dry -eq 1 ]] && return 0
    local p
    for p in "${pids[@]}"; do wait "$p" || true; done
    pids=()
}

# crow ENGINE CHECK LABEL USER ASKED_MIB ASKED_PCT: a finished container probe's row
crow() {
    [[ $dry -eq 1 ]] && return 0
    local engine=$1 check=$2 label=$3 user=$4 asked_mib=$5 asked_pct=$6
    local f=$out/$label.txt ceiling ips meta rc wall mem
    ceiling=$(field "$f" ceiling_mib)
    ips=$(field "$f" iter_per_s)
    meta=$(cat "$out/$label.meta" 2>/dev/null || true)
    rc=$(echo "$meta" | sed -n 's/^rc=\([0-9]*\).*/\1/p')
    wall=$(echo "$meta" | sed -n 's/.* wall_s=//p')
    if [[ -z "$ceiling" || -z "$ips" ]]; then
        local why
        why=$(tail -c 300 "$out/$label.err" 2>/dev/null | tr '\n' ' ' || true)
        crows+=("$(printf '%-9s %-13s %-16s %-11s %9s %11s %-8s %9s %9s %4s %7s  %s' "$engine" "$check" "$label" "$user" "$asked_mib" \
            - - "$asked_pct" - "${rc:--}" "${wall:--}" "failed: $why")")
        return
    fi
    mem=held
    if [[ "$asked_mib" =~ ^[0-9]+$ ]] && awk -v c="$ceiling" -v a="$asked_mib" 'BEGIN { exit !(c > a) }'; then mem=exceeded; fi
    crows+=("$(printf '%-9s %-13s %-16s %-11s %9s %11s %-8s %9s %9s %4s %7s  %s' "$engine" "$check" "$label" "$user" "$asked_mib" \
        "$ceiling" "$mem" "$asked_pct" "$(share "$ips")" "${rc:--}" "${wall:--}" "$ips")")
}

# engine_args ENGINE LABEL MIB PCT: the runtime arguments that give a container the engine and its limits, as the
# node agents give them (into the array eargs)
engine_args() {
    local engine=$1 label=$2 mib=$3 pct=$4
    case $engine in
        mps)
            eargs=(--ipc host -v "$cmps_dir/pipe:/tmp/nvidia-mps" -e CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps
                -e "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=${mib}M" -e "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$pct")
            ;;
        hami-core)
            local cache=$chami_dir/cache/$label
            # the container's own cache directory, empty and open to every uid, as the agents make it
            x mkdir -p "$cache"
            x chmod 0777 "$cache"
            eargs=(-v "$hami:/usr/local/vgpu/libvgpu.so:ro" -v "$chami_dir/ld.so.preload:/etc/ld.so.preload:ro"
                -v "$cache:/usr/local/vgpu/cache" -v /tmp/vgpulock:/tmp/vgpulock
                -e "CUDA_DEVICE_MEMORY_LIMIT_0=${mib}m" -e "CUDA_DEVICE_SM_LIMIT=$pct"
                -e CUDA_DEVICE_MEMORY_SHARED_CACHE=/usr/local/vgpu/cache/vgpu.cache)
            ;;
    esac
}

# write_preload: the preload file as the agents write it (a temporary file renamed over it, rw-r--r--)
write_preload() {
    if [[ $dry -eq 1 ]]; then
        echo "+ (write $chami_dir/ld.so.preload: \"/usr/local/vgpu/libvgpu.so\", rw-r--r--, renamed over the old one)"
        return 0
    fi
    printf '%s\n' /usr/local/vgpu/libvgpu.so >"$chami_dir/.ld.so.preload.tmp"
    chmod 0644 "$chami_dir/.ld.so.preload.tmp"
    mv -f "$chami_dir/.ld.so.preload.tmp" "$chami_dir/ld.so.preload"
}

# ctr_engine ENGINE: the container checks under one engine
ctr_engine() {
    local engine=$1 now
    local -a unset_prefix=() special_prefix=()
    local special
    case $engine in
        mps)
            unset_prefix=(env -u CUDA_MPS_PINNED_DEVICE_MEM_LIMIT -u CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)
            special=skip-mps
            special_prefix=(env CUDA_MPS_PIPE_DIRECTORY=/tmp/qgpu-no-mps-here)
            ;;
        hami-core)
            unset_prefix=(env -u CUDA_DEVICE_MEMORY_LIMIT_0 -u CUDA_DEVICE_SM_LIMIT -u CUDA_DEVICE_MEMORY_SHARED_CACHE)
            special=no-ld-preload
            special_prefix=(env -u LD_PRELOAD)
            ;;
    esac
    local p=${engine%-core}

    echo "containers/$engine: limits: two containers, 30% / 8 GiB and 60% / 16 GiB" >&2
    now=$(( $(date +%s) * 1000 + lead * 1000 ))
    engine_args "$engine" "c$p-30" 8192 30; cjob "c$p-30" "$now" "$seconds" "${eargs[@]}"
    engine_args "$engine" "c$p-60" 16384 60; cjob "c$p-60" "$now" "$seconds" "${eargs[@]}"
    cwait
    crow "$engine" limits "c$p-30" root 8192 30
    crow "$engine" limits "c$p-60" root 16384 60

    echo "containers/$engine: non-root: one container as uid 65534" >&2
    engine_args "$engine" "c$p-nonroot" 8192 30; cjob "c$p-nonroot" 0 "$seconds" --user 65534:65534 "${eargs[@]}"
    cwait
    crow "$engine" non-root "c$p-nonroot" 65534 8192 30

    echo "containers/$engine: uids: two tenants at once as uid 1000 and uid 2000" >&2
    now=$(( $(date +%s) * 1000 + lead * 1000 ))
    engine_args "$engine" "c$p-uid1000" 8192 30; cjob "c$p-uid1000" "$now" "$seconds" --user 1000:1000 "${eargs[@]}"
    engine_args "$engine" "c$p-uid2000" 16384 60; cjob "c$p-uid2000" "$now" "$seconds" --user 2000:2000 "${eargs[@]}"
    cwait
    crow "$engine" uids "c$p-uid1000" 1000 8192 30
    crow "$engine" uids "c$p-uid2000" 2000 16384 60

    echo "containers/$engine: unset, env-i, $special: clients that shed what the agent set" >&2
    engine_args "$engine" "c$p-unset" 8192 30; cjob "c$p-unset" 0 "$seconds" "${eargs[@]}" -- "${unset_prefix[@]}"
    cwait
    crow "$engine" unset "c$p-unset" root 8192 30
    engine_args "$engine" "c$p-envi" 8192 30; cjob "c$p-envi" 0 "$seconds" "${eargs[@]}" -- env -i
    cwait
    crow "$engine" env-i "c$p-envi" root 8192 30
    engine_args "$engine" "c$p-$special" 8192 30; cjob "c$p-$special" 0 "$seconds" "${eargs[@]}" -- "${special_prefix[@]}"
    cwait
    crow "$engine" "$special" "c$p-$special" root 8192 30

    echo "containers/$engine: restart: the agent's stop and start while a client runs" >&2
    local long
    long=$(awk -v s="$seconds" 'BEGIN { printf "%g", 3 * s }')
    now=$(( $(date +%s) * 1000 + lead * 1000 ))
    engine_args "$engine" "c$p-restart" 8192 30; cjob "c$p-restart" "$now" "$long" "${eargs[@]}"
    local mid
    mid=$(awk -v n="$now" -v s="$seconds" 'BEGIN { printf "%.0f", n / 1000 + s }')
    if [[ $dry -eq 1 ]]; then
        echo "    (then, at the middle of its kernel phase:)"
    else
        while [[ $(date +%s) -lt $mid ]]; do sleep 1; done
    fi
    case $engine in
        mps)
            mps_quit
            mps_up "$cmps_dir" || failed=1
            engine_args "$engine" "c$p-after" 8192 30; cjob "c$p-after" 0 "$seconds" "${eargs[@]}"
            cwait
            crow "$engine" restart "c$p-restart" root 8192 30
            crow "$engine" restart "c$p-after" root 8192 30
            ;;
        hami-core)
            write_preload
            local -a ecmd=("$rt" exec "qgpu-probe-c$p-restart-$$" "$ctr_java" "${java_opts[@]}" -cp "$ctr_jar" io.qgpu.samples.gpuprobe.Main
                --label "c$p-exec" --device 0 --seconds "$seconds")
            if [[ $dry -eq 1 ]]; then
                say "${ecmd[@]}"
            else
                local rc=0 s e
                s=$(date +%s.%N)
                "${ecmd[@]}" >"$out/c$p-exec.txt" 2>"$out/c$p-exec.err" || rc=$?
                e=$(date +%s.%N)
                echo "rc=$rc wall_s=$(awk -v s="$s" -v e="$e" 'BEGIN { printf "%.1f", e - s }')" >"$out/c$p-exec.meta"
            fi
            cwait
            crow "$engine" restart "c$p-restart" root 8192 30
            crow "$engine" restart "c$p-exec" root 8192 30
            ;;
    esac
}

run_containers() {
    if [[ $containers == off ]]; then
        ctr_skip "--containers off"
        return 0
    fi
    if ! detect_runtime; then
        if [[ $dry -eq 0 ]]; then
            ctr_skip "no container runtime with NVIDIA support: $ctr_why"
            return 0
        fi
        echo "containers: no container runtime with NVIDIA support here ($ctr_why); on a machine with docker and the nvidia runtime the commands would be:" | tee -a "$summary"
        rt=docker
        gpu_args=(--runtime nvidia -e "NVIDIA_VISIBLE_DEVICES=$uuid" -e "$caps")
    fi
    if [[ ! -x "$here/runtime/bin/java" || ! -f "$here/gpu-probe.jar" ]]; then
        if [[ $dry -eq 0 ]]; then
            ctr_skip "no bundle beside the script ($here/runtime/bin/java and $here/gpu-probe.jar): run the container checks from make-bundle.sh's bundle (./run-check.sh)"
            return 0
        fi
        echo "containers: (needs the bundle: $here/runtime/bin/java and $here/gpu-probe.jar, from make-bundle.sh)" | tee -a "$summary"
    fi
    if [[ $dry -eq 0 ]]; then
        if ! "$rt" image inspect "$image" >/dev/null 2>&1 && ! "$rt" pull "$image" >/dev/null 2>&1; then
            ctr_skip "image $image is not here and cannot be pulled (--container-image names another)"
            return 0
        fi
        if ! "$rt" run --rm "${gpu_args[@]}" "$image" sh -c 'test -e /dev/nvidiactl' >"$out/container-smoke.err" 2>&1; then
            ctr_skip "$rt run ${gpu_args[*]} $image: no GPU in the container (see $out/container-smoke.err)"
            return 0
        fi
    fi
    echo "containers: $rt ${gpu_args[*]}, image $image" | tee -a "$summary"

    if command -v "$mps_control" >/dev/null 2>&1 || [[ $dry -eq 1 ]]; then
        if [[ $dry -eq 1 ]]; then cmps_dir=/tmp/qgpu-cmps.XXXXXX; else cmps_dir=$(mktemp -d /tmp/qgpu-cmps.XXXXXX); fi
        # open to every uid: the control daemon starts a server per client uid, and clients of other uids connect
        x mkdir -p "$cmps_dir/pipe" "$cmps_dir/log"
        x chmod 0777 "$cmps_dir/pipe" "$cmps_dir/log"
        x chmod 0755 "$cmps_dir"
        quit_cmps() {
            mps_quit
            if [[ $dry -eq 0 ]]; then
                cp -r "$cmps_dir/log" "$out/container-mps-log" 2>/dev/null || true
                rm -rf "$cmps_dir"
            fi
        }
        if mps_up "$cmps_dir"; then
            trap quit_cmps EXIT
            ctr_engine mps
            quit_cmps
            trap - EXIT
        else
            failed=1
            quit_cmps
        fi
    else
        echo "containers/mps: skipped: $mps_control not found" | tee -a "$summary"
    fi

    if [[ -n "$hami" && ( -f "$hami" || $dry -eq 1 ) ]]; then
        chami_dir=$out/container-hami-core
        x mkdir -p "$chami_dir/cache" /tmp/vgpulock
        x chmod 0777 /tmp/vgpulock
        write_preload
        ctr_engine hami-core
    else
        echo "containers/hami-core: skipped: no libvgpu.so (--hami-core-library PATH)" | tee -a "$summary"
    fi
}
run_containers

if [[ $dry -eq 1 ]]; then
    echo "dry run: done; nothing was started"
    exit 0
fi
{
    printf '%-10s %-10s %12s %12s %10s %10s  %s\n' case probe asked_mib ceiling_mib asked_pct share_pct iter_per_s
    printf '%s\n' "${rows[@]}"
    echo "share_pct: the probe's kernel throughput in percent of the solo probe's; ceiling_mib: the most device memory it held at once"
    if [[ ${#crows[@]} -gt 0 ]]; then
        echo "containers:"
        printf '%-9s %-13s %-16s %-11s %9s %11s %-8s %9s %9s %4s %7s  %s\n' engine check probe user asked_mib ceiling_mib mem asked_pct \
            share_pct exit wall_s iter_per_s
        printf '%s\n' "${crows[@]}"
        echo "mem: held when ceiling_mib is at most asked_mib; exit: the container's exit status; wall_s: its run time with start-up"
    fi
} | tee -a "$summary"
echo "output: $out"
exit "$failed"
