package io.qgpu.samples.gpuprobe;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What one probe measured, printed as one line of {@code key=value} pairs separated by single spaces
 * (no value contains a space or an {@code =}), first the word {@code gpu-probe}:
 *
 * <pre>
 * gpu-probe label=a device=0 name=NVIDIA_H100_80GB_HBM3 driver=12040 cc=9.0 sms=132 mem_total_mib=81559
 *   mem_free_mib=80994 ceiling_mib=8191 allocations=40 refusal=CUDA_ERROR_OUT_OF_MEMORY blocks=1056 threads=256
 *   iterations=1048576 launches=480 kernel_ms=5012.345 iter_per_s=5.8e+13
 * </pre>
 * (one line; wrapped here). {@code ceiling_mib} is the most device memory held at once, exact to below
 * 1 MiB; {@code iter_per_s} is FMA iterations over all threads per second of GPU time between two events
 * around all launches.
 *
 * <p>Thread safety: immutable.
 */
public record ProbeResult(String label, int device, String name, int driverVersion, int computeCapability, int sms,
                          long memTotalBytes, long memFreeBytes, MemoryCeiling.Result ceiling, int blocks, int threads,
                          int iterations, long launches, double kernelMillis) {

    /** FMA iterations over all threads per second of measured GPU time. */
    public double iterationsPerSecond() {
        return (double) launches * blocks * threads * iterations / (kernelMillis / 1000.0);
    }

    /** The fields in print order. */
    public Map<String, String> fields() {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("label", label);
        f.put("device", Integer.toString(device));
        f.put("name", name.trim().replaceAll("[\\s=]+", "_"));
        f.put("driver", Integer.toString(driverVersion));
        f.put("cc", (computeCapability / 10) + "." + (computeCapability % 10));
        f.put("sms", Integer.toString(sms));
        f.put("mem_total_mib", Long.toString(memTotalBytes >> 20));
        f.put("mem_free_mib", Long.toString(memFreeBytes >> 20));
        f.put("ceiling_mib", Long.toString(ceiling.bytes() >> 20));
        f.put("allocations", Integer.toString(ceiling.allocations()));
        f.put("refusal", ceiling.refusal());
        f.put("blocks", Integer.toString(blocks));
        f.put("threads", Integer.toString(threads));
        f.put("iterations", Integer.toString(iterations));
        f.put("launches", Long.toString(launches));
        f.put("kernel_ms", String.format(Locale.ROOT, "%.3f", kernelMillis));
        f.put("iter_per_s", String.format(Locale.ROOT, "%.4e", iterationsPerSecond()));
        return f;
    }

    /** The result line. */
    public String line() {
        return "gpu-probe " + fields().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                .collect(Collectors.joining(" "));
    }
}
