package io.qgpu.nvml;

/**
 * NVML's return codes ({@code nvmlReturn_t}), with {@link #UNRECOGNIZED} for a code this binding does
 * not know yet (a newer driver may add some; {@link NvmlException#rawCode()} keeps it).
 *
 * <pre>{@code
 * NvmlReturn.of(15);     // GPU_IS_LOST
 * NvmlReturn.of(4711);   // UNRECOGNIZED
 * }</pre>
 *
 * <p>Thread safety: immutable.
 */
public enum NvmlReturn {
    SUCCESS(0, "success"),
    UNINITIALIZED(1, "NVML was not initialized"),
    INVALID_ARGUMENT(2, "a supplied argument is invalid"),
    NOT_SUPPORTED(3, "the requested operation is not available on this device"),
    NO_PERMISSION(4, "the current user does not have permission for this operation"),
    ALREADY_INITIALIZED(5, "already initialized (deprecated code)"),
    NOT_FOUND(6, "a query to find an object was unsuccessful"),
    INSUFFICIENT_SIZE(7, "an input argument is not large enough"),
    INSUFFICIENT_POWER(8, "a device's external power cables are not properly attached"),
    DRIVER_NOT_LOADED(9, "the NVIDIA driver is not loaded"),
    TIMEOUT(10, "the user-provided timeout passed"),
    IRQ_ISSUE(11, "the NVIDIA kernel detected an interrupt issue with a GPU"),
    LIBRARY_NOT_FOUND(12, "NVML shared library could not be found or loaded"),
    FUNCTION_NOT_FOUND(13, "a function is not implemented by the loaded NVML library"),
    CORRUPTED_INFOROM(14, "the infoROM is corrupted"),
    GPU_IS_LOST(15, "the GPU has fallen off the bus or has otherwise become inaccessible"),
    RESET_REQUIRED(16, "the GPU requires a reset before it can be used again"),
    OPERATING_SYSTEM(17, "the GPU control device has been blocked by the operating system/cgroups"),
    LIB_RM_VERSION_MISMATCH(18, "the NVML library and the RM driver versions do not match"),
    IN_USE(19, "the operation cannot be performed because the GPU is currently in use"),
    MEMORY(20, "insufficient memory"),
    NO_DATA(21, "no data"),
    VGPU_ECC_NOT_SUPPORTED(22, "the requested vGPU operation is not available because ECC is enabled"),
    INSUFFICIENT_RESOURCES(23, "ran out of critical resources, other than memory"),
    FREQ_NOT_SUPPORTED(24, "the frequency is not supported"),
    ARGUMENT_VERSION_MISMATCH(25, "the provided version is invalid or unsupported"),
    DEPRECATED(26, "the requested functionality has been deprecated"),
    NOT_READY(27, "the system is not ready for the request"),
    GPU_NOT_FOUND(28, "no GPUs were found"),
    INVALID_STATE(29, "the resource is in an invalid state"),
    RESET_TYPE_NOT_SUPPORTED(30, "the reset type is not supported"),
    UNKNOWN(999, "an internal driver error occurred"),
    /** A code not in this list; see {@link NvmlException#rawCode()}. */
    UNRECOGNIZED(-1, "a return code this binding does not know");

    private static final NvmlReturn[] BY_CODE = new NvmlReturn[31];

    static {
        for (NvmlReturn r : values()) {
            if (r.code >= 0 && r.code < BY_CODE.length) {
                BY_CODE[r.code] = r;
            }
        }
    }

    private final int code;
    private final String description;

    NvmlReturn(int code, String description) {
        this.code = code;
        this.description = description;
    }

    /** The C value; -1 for {@link #UNRECOGNIZED}. */
    public int code() {
        return code;
    }

    /** What the code means, in words. */
    public String description() {
        return description;
    }

    /** The C constant's name, for example {@code NVML_ERROR_GPU_IS_LOST}. */
    public String cName() {
        return this == SUCCESS ? "NVML_SUCCESS" : "NVML_ERROR_" + name();
    }

    /** Maps a C value; never fails: unknown values give {@link #UNRECOGNIZED}. */
    public static NvmlReturn of(int code) {
        if (code >= 0 && code < BY_CODE.length && BY_CODE[code] != null) {
            return BY_CODE[code];
        }
        return code == UNKNOWN.code ? UNKNOWN : UNRECOGNIZED;
    }
}
