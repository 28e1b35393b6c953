package io.qgpu.api;

/**
 * The host resources a claim asks for on its node, besides its GPU slices: CPU in millicores
 * (Kubernetes' {@code 500m} is 500, {@code 2} is 2000) and host memory in bytes. Reserved by the
 * ledger together with the GPU slices, all or nothing.
 *
 * <pre>{@code
 * HostRequest r = new HostRequest(1500, 4L << 30);   // 1.5 CPUs, 4 GiB
 * HostRequest.none().isNone();                       // true
 * }</pre>
 *
 * @param cpuMillis   CPU in millicores, {@code >= 0}
 * @param memoryBytes host memory in bytes, {@code >= 0}
 *
 * <p>Thread safety: immutable.
 */
public record HostRequest(long cpuMillis, long memoryBytes) {

    private static final HostRequest NONE = new HostRequest(0, 0);

    public HostRequest {
        Validate.atLeast("claim.host.cpuMillis", cpuMillis, 0);
        Validate.atLeast("claim.host.memoryBytes", memoryBytes, 0);
    }

    /** No host resources: the default of a claim. */
    public static HostRequest none() {
        return NONE;
    }

    /** Whether this asks for no CPU and no host memory. */
    public boolean isNone() {
        return cpuMillis == 0 && memoryBytes == 0;
    }
}
