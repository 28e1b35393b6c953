package io.qgpu.testkit.sim;

/**
 * How the simulated GPU ends an offline tenant's grant.
 *
 * <pre>{@code
 * GpuSpec qgpu = GpuSpec.of("gpu0", IsolationPolicy.FIXED_SHARE, tenants);               // DRIVER
 * GpuSpec gemini = qgpu.withSlicing(Slicing.LAUNCH);
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum Slicing {
    /** The driver stops the holder when its grant expires, mid-kernel if need be (qGPU). */
    DRIVER,
    /** The holder stops launching when its grant expires; the kernel in flight runs to its end (Gemini's hook), an overrun. */
    LAUNCH;

    public String wireName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
