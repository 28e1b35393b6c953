package io.qgpu.cli.replay;

import java.util.Set;

/**
 * One row of the trace's pod list (the columns the replay reads: {@code name,cpu_milli,memory_mib,
 * num_gpu,gpu_milli,gpu_spec,qos}).
 *
 * @param name      pod name
 * @param cpuMillis host CPU asked, in millicores
 * @param memoryMib host memory asked, in MiB
 * @param gpus      GPUs asked ({@code num_gpu}; 0 for a CPU-only pod)
 * @param gpuMilli  thousandths of each GPU ({@code gpu_milli}; 1000 for whole GPUs, 0 without GPU)
 * @param models    GPU models the pod may use ({@code gpu_spec}, split at '|'; empty: any)
 * @param qos       the QoS label as written ({@code LS}, {@code BE}, ...; empty when the column is absent)
 */
public record TracePod(String name, long cpuMillis, long memoryMib, int gpus, int gpuMilli, Set<String> models, String qos) {

    public TracePod {
        models = Set.copyOf(models);
    }

    /** The GPU capacity the pod asks, in thousandths of a GPU: {@code gpus x gpuMilli}. */
    public long totalMilli() {
        return (long) gpus * gpuMilli;
    }
}
