package io.qgpu.api.spi;

import java.util.List;

/**
 * Per-process GPU usage as measured by the driver, so that an engine that accounts GPU time itself
 * (the runtime gate) can correct its books with what really ran. qgpu-nvml implements it over NVML's
 * process utilization samples; tests implement it with a list.
 *
 * <pre>{@code
 * ProcessUsageSource source = ...;          // e.g. io.qgpu.nvml.usage.NvmlUsageSampler
 * long last = 0;
 * for (ProcessUsageSample s : source.samples("GPU-0b5c...", last)) {
 *     last = Math.max(last, s.timestampMicros());
 *     if (s.pid() == ProcessHandle.current().pid()) { ... s.smUtilPercent() ... }
 * }
 * }</pre>
 *
 * <p>Implementations must be thread-safe.
 */
@FunctionalInterface
public interface ProcessUsageSource {

    /**
     * The samples of every process on the GPU taken strictly after {@code sinceMicros}, oldest first.
     * An empty list means no process was sampled since then.
     *
     * @param gpuUuid     the GPU ({@code GPU-...})
     * @param sinceMicros a timestamp from an earlier sample, or 0 for everything the driver still holds
     * @throws io.qgpu.api.InvalidValueException if the GPU is not known to the source
     * @throws io.qgpu.api.QgpuException          if the source cannot be read
     */
    List<ProcessUsageSample> samples(String gpuUuid, long sinceMicros);
}
