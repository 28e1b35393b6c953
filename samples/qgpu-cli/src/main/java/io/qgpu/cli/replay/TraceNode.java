package io.qgpu.cli.replay;

/**
 * One row of the trace's node list ({@code sn,cpu_milli,memory_mib,gpu,model}).
 *
 * @param name      node name ({@code sn})
 * @param cpuMillis host CPU in millicores
 * @param memoryMib host memory in MiB
 * @param gpus      number of GPUs
 * @param model     GPU model (empty when the node has no GPU)
 */
public record TraceNode(String name, long cpuMillis, long memoryMib, int gpus, String model) {
}
