package io.qgpu.nvml;

/**
 * What is at the far end of an NVLink ({@code nvmlIntNvLinkDeviceType_t}), or {@link #UNKNOWN} when NVML
 * cannot tell (it says so with the value 0xFF, or the lookup fails, as it does in some VMs).
 *
 * <pre>{@code
 * if (gpu.nvLinkRemoteType(0) == NvmlNvLinkRemoteType.SWITCH) { ... }
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum NvmlNvLinkRemoteType {
    /** Another GPU (a direct link or a bridge). */
    GPU,
    /** An IBM POWER CPU's NVLink port. */
    IBMNPU,
    /** An NVSwitch. */
    SWITCH,
    /** Not known. */
    UNKNOWN;

    /** Maps the C value; values this binding does not know are {@link #UNKNOWN}. */
    public static NvmlNvLinkRemoteType of(int nvmlValue) {
        return switch (nvmlValue) {
            case 0 -> GPU;
            case 1 -> IBMNPU;
            case 2 -> SWITCH;
            default -> UNKNOWN;
        };
    }
}
