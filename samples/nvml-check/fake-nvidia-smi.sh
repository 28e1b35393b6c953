#!/usr/bin/env bash
# A stand-in for nvidia-smi that describes the fake library's t4x4 machine, to dry-run
# check-real-gpu.sh without a GPU:
#
#   ./mvnw -q -pl samples/qgpu-cli -am package        # builds the CLI and qgpu-nvml/target/fake-nvml
#   FAKE_NVML_MACHINE=t4x4 NVIDIA_SMI=samples/nvml-check/fake-nvidia-smi.sh \
#   QGPU_JAVA_OPTS=-Dqgpu.nvml.library=$PWD/qgpu-nvml/target/fake-nvml/libnvidia-ml.so.1 \
#       samples/nvml-check/check-real-gpu.sh
#
# Set FAKE_SMI_BREAK=1 to make it disagree (a name and a link), which the check must report.
set -euo pipefail
uuids=(GPU-7400b6a7-fa4e-4e00-8000-000000d00000 GPU-7400b6c2-fa4e-4e00-8000-000000d00001
       GPU-7400b61a-fa4e-4e00-8000-000000d00002 GPU-7400b633-fa4e-4e00-8000-000000d00003)
bus=(00000000:3B:00.0 00000000:5E:00.0 00000000:86:00.0 00000000:AF:00.0)
broken=${FAKE_SMI_BREAK:-0}
case "${1:-} ${2:-}" in
"-q -x")
    printf '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n<nvidia_smi_log>\n'
    printf '\t<driver_version>535.183.01</driver_version>\n\t<attached_gpus>4</attached_gpus>\n'
    for i in 0 1 2 3; do
        name="Tesla T4"
        [[ $broken == 1 && $i == 2 ]] && name="Tesla V100-SXM2-16GB"
        printf '\t<gpu id="%s">\n\t\t<product_name>%s</product_name>\n' "${bus[$i]}" "$name"
        printf '\t\t<mig_mode>\n\t\t\t<current_mig>N/A</current_mig>\n\t\t\t<pending_mig>N/A</pending_mig>\n\t\t</mig_mode>\n'
        printf '\t\t<uuid>%s</uuid>\n\t\t<minor_number>%d</minor_number>\n' "${uuids[$i]}" "$i"
        printf '\t\t<pci>\n\t\t\t<pci_bus_id>%s</pci_bus_id>\n\t\t</pci>\n' "${bus[$i]}"
        printf '\t\t<fb_memory_usage>\n\t\t\t<total>15872 MiB</total>\n\t\t\t<reserved>512 MiB</reserved>\n\t\t</fb_memory_usage>\n\t</gpu>\n'
    done
    printf '</nvidia_smi_log>\n'
    ;;
"topo -m")
    l01=PHB
    [[ $broken == 1 ]] && l01=NV2
    printf '\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n'
    printf 'GPU0\t X \t%s\tSYS\tSYS\t0-15\t0\t\tN/A\n' "$l01"
    printf 'GPU1\t%s\t X \tSYS\tSYS\t0-15\t0\t\tN/A\n' "$l01"
    printf 'GPU2\tSYS\tSYS\t X \tPHB\t16-31\t1\t\tN/A\n'
    printf 'GPU3\tSYS\tSYS\tPHB\t X \t16-31\t1\t\tN/A\n'
    printf '\nLegend:\n\n  X    = Self\n'
    ;;
"-L ")
    for i in 0 1 2 3; do printf 'GPU %d: Tesla T4 (UUID: %s)\n' "$i" "${uuids[$i]}"; done
    ;;
*)
    echo "fake nvidia-smi: unsupported arguments: $*" >&2
    exit 1
    ;;
esac
