package io.qgpu.nvml;

/**
 * One process utilization sample ({@code nvmlProcessUtilizationSample_t}).
 *
 * <pre>{@code
 * long last = 0;
 * for (NvmlProcessUtilization s : gpu.processUtilization(last)) {
 *     last = Math.max(last, s.timestampMicros());
 * }
 * }</pre>
 *
 * @param pid             the process id
 * @param timestampMicros CPU timestamp of the sample, in microseconds
 * @param smPercent       SM (compute) utilization, 0..100
 * @param memoryPercent   frame-buffer memory utilization, 0..100
 * @param encoderPercent  video encoder utilization, 0..100
 * @param decoderPercent  video decoder utilization, 0..100
 *
 * <p>Thread safety: immutable.
 */
public record NvmlProcessUtilization(long pid, long timestampMicros, int smPercent, int memoryPercent,
                                     int encoderPercent, int decoderPercent) {
}
