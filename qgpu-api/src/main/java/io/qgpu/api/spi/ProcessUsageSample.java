package io.qgpu.api.spi;

import io.qgpu.api.Validate;

/**
 * What one process used of one GPU in one sampling period, as the driver measured it.
 *
 * <pre>{@code
 * ProcessUsageSample s = new ProcessUsageSample("GPU-0b5c...", 4242, 1_700_000_000_000_000L, 37, 12, 2L << 30);
 * s.smUtilPercent();      // 37: share of the period in which a kernel of pid 4242 ran on the SMs
 * s.hasUsedMemory();      // true
 * }</pre>
 *
 * @param gpuUuid          the GPU ({@code GPU-...})
 * @param pid              operating-system process id, {@code >= 0}
 * @param timestampMicros  when the driver took the sample, in microseconds on the driver's CPU clock
 *                         (NVML: wall-clock microseconds), {@code >= 0}
 * @param smUtilPercent    SM (compute) utilization of the process in the period, 0..100
 * @param memUtilPercent   memory-controller utilization of the process in the period, 0..100
 * @param usedMemoryBytes  device memory the process holds, or {@link #UNKNOWN_MEMORY} when not known
 *
 * <p>Thread safety: immutable.
 */
public record ProcessUsageSample(String gpuUuid, long pid, long timestampMicros, int smUtilPercent,
                                 int memUtilPercent, long usedMemoryBytes) {

    /** {@link #usedMemoryBytes()} when the driver did not report it. */
    public static final long UNKNOWN_MEMORY = -1;

    public ProcessUsageSample {
        Validate.notBlank("processUsageSample.gpuUuid", gpuUuid);
        Validate.atLeast("processUsageSample.pid", pid, 0);
        Validate.atLeast("processUsageSample.timestampMicros", timestampMicros, 0);
        Validate.between("processUsageSample.smUtilPercent", smUtilPercent, 0, 100);
        Validate.between("processUsageSample.memUtilPercent", memUtilPercent, 0, 100);
        Validate.atLeast("processUsageSample.usedMemoryBytes", usedMemoryBytes, UNKNOWN_MEMORY);
    }

    /** Whether {@link #usedMemoryBytes()} is known. */
    public boolean hasUsedMemory() {
        return usedMemoryBytes != UNKNOWN_MEMORY;
    }
}
